// Shared by the browser tests: the whole stack with a receiving MX over
// loopback DNS (sign-in codes really travel), oidc-provider standing in for
// Google, demo apps on other loopback origins, and Debian's chromium through
// playwright-core. Only free ports; nothing is downloaded.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { simpleParser } from 'mailparser';
import { chromium, type Browser, type Page } from 'playwright-core';
import { Stack, type Project } from '../../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, type MxSink } from '../../helpers/mx-sink.js';
import { startOpenIdProvider, type OpenIdProvider } from '../auth/peers.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const SHOTS = path.join(root, 'test-results', 'browser');
export const INBOX = 'inbox.test';

/**
 * Waits for every start, then throws the first failure. With Promise.all a failure would leave the
 * others running unassigned, so afterAll could not stop them (a stack kept running after the file).
 */
export async function allStarted(starts: Array<Promise<unknown>>): Promise<void> {
  const failed = (await Promise.allSettled(starts)).find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
}

export function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  });
}

export interface Env {
  stack: Stack;
  dns: DnsServer;
  sink: MxSink;
  idp: OpenIdProvider;
  /** postgate as browsers reach it (its base URL, which names localhost): the widget's origin. */
  id: string;
  project: Project;
  /** A live key of scope auth: the one a browser may hold. */
  authKey: string;
  close(): Promise<void>;
}

/** The stack, an MX for inbox.test, and a project "Acme" with Google (oidc-provider) and email codes. */
export async function startEnv(slug: string): Promise<Env> {
  const sink = await startMxSink();
  const dns = await startDnsServer([
    { type: 'MX', name: INBOX, exchange: `mx.${INBOX}`, priority: 10 },
    { type: 'A', name: `mx.${INBOX}`, address: '127.0.0.1' },
  ]);
  const stack = await Stack.start({
    env: {
      POSTGATE_DNS_SERVERS: dns.address,
      POSTGATE_DELIVERY_PORT: String(sink.port),
      POSTGATE_SYSTEM_FROM: 'no-reply@postgate.test',
      POSTGATE_TEST_CLOCK: '1',
    },
    config: { delivery: { retryDelays: [1], maxTempFailures: 3, connectTimeout: 5, concurrency: 10, rejectRetryDelays: [] } },
  });
  const id = `http://localhost:${new URL(stack.url).port}`;
  const idp = await startOpenIdProvider([
    { client_id: 'google-client', client_secret: 'google-secret', redirect_uris: [`${id}/callback/google`], token_endpoint_auth_method: 'client_secret_post' },
  ]);
  const project = await stack.createProject(slug, 'Acme');
  await stack.admin('PUT', `/admin/v1/projects/${slug}/auth/providers/google`, {
    clientId: 'google-client',
    clientSecret: 'google-secret',
    issuer: idp.issuer,
    authorizationUrl: `${idp.issuer}/auth`,
    tokenUrl: `${idp.issuer}/token`,
    jwksUrl: `${idp.issuer}/jwks`,
  });
  const authKey = (await stack.admin('POST', `/admin/v1/projects/${slug}/keys`, { kind: 'live', scope: 'auth' })).key as string;
  return {
    stack,
    dns,
    sink,
    idp,
    id,
    project,
    authKey,
    async close() {
      await Promise.all([idp.close(), stack.stop()]);
      await Promise.all([sink.close(), dns.close()]);
    },
  };
}

export const allowOrigin = (env: Env, origin: string) => env.stack.admin('POST', `/admin/v1/projects/${env.project.slug}/auth/origins`, { origin });

/** The sign-in code in the newest message the MX accepted for `to`. */
export async function codeFor(sink: MxSink, to: string, after = 0, timeoutMs = 20_000): Promise<string> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const m = [...sink.messages].reverse().find((x) => x.receivedAt >= after && x.rcptTo.includes(to));
    if (m) {
      const text = (await simpleParser(m.raw)).text ?? '';
      const code = /code is (\d{6})/.exec(text)?.[1];
      if (code) return code;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no sign-in code reached ${to}`);
}

// ---------------------------------------------------------------- demo apps

export interface DemoApp {
  origin: string;
  /** Session tokens the app got from exchange-code, newest last. */
  tokens: string[];
  close(): Promise<void>;
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${esc(title)}</title></head><body style="font-family:system-ui;margin:16px">${body}</body></html>`;

let bundle: Promise<string> | undefined;

/** The React demo (fixtures/react-app.tsx with the SDK's sources), bundled into a temp dir. */
export function reactBundle(): Promise<string> {
  bundle ??= (async () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-react-'));
    await build({
      entryPoints: [path.join(root, 'test/e2e/browser/fixtures/react-app.tsx')],
      bundle: true,
      format: 'iife',
      jsx: 'automatic',
      target: ['es2020'],
      outfile: path.join(out, 'react-app.js'),
      define: { 'process.env.NODE_ENV': '"development"' },
      logLevel: 'silent',
    });
    return fs.readFileSync(path.join(out, 'react-app.js'), 'utf8');
  })();
  return bundle;
}

/**
 * An app on its own loopback origin: `/` embeds the widget, `/callback` sends svc_code and the
 * tab's verifier to its server, which exchanges them with the live key and shows the user,
 * `/signout` ends the session, `/react` is the React SDK demo (`?key=` overrides its key).
 */
export async function startDemoApp(env: Env, opts: { redirectOrigin?: string } = {}): Promise<DemoApp> {
  const server = http.createServer();
  const tokens: string[] = [];
  const sessions = new Map<string, string>();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const api = (p: string, body: unknown, token?: string) =>
    fetch(`${env.stack.url}/api/v1/auth${p}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-key': env.project.keys.live, ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

  server.on('request', async (req, res) => {
    const url = new URL(req.url!, origin);
    const html = (status: number, body: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...headers });
      res.end(body);
    };
    if (url.pathname === '/') {
      const lang = url.searchParams.get('lang');
      return html(
        200,
        page(
          'Demo app',
          `<h1>Demo app</h1><div id="signin"></div>
<script src="${env.id}/embed/v1.js" data-slug="${env.project.slug}" data-redirect-uri="${opts.redirectOrigin ?? origin}/callback?from=widget" data-id-host="${env.id}" data-target="#signin"${lang ? ` data-lang="${lang}"` : ''}></script>`,
        ),
      );
    }
    // The callback page is the browser's: it holds the verifier the embed script kept in sessionStorage
    // (login CSRF binding) and hands it with svc_code to the app's server, which exchanges both.
    if (url.pathname === '/callback') {
      return html(
        200,
        page(
          'Callback',
          `<div id="out"></div><script>(async () => {
  const q = new URL(location.href).searchParams;
  const out = document.getElementById('out');
  const code = q.get('svc_code');
  if (!code) { const p = document.createElement('p'); p.id = 'result'; p.textContent = 'no code: ' + (q.get('error') || ''); out.append(p); return; }
  const codeVerifier = sessionStorage.getItem('postgate.code-verifier');
  const r = await fetch('/callback/exchange', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code, codeVerifier }) });
  out.innerHTML = await r.text();
})();</script>`,
        ),
      );
    }
    if (url.pathname === '/callback/exchange' && req.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const { code, codeVerifier } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { code: string; codeVerifier: string | null };
      const r = await api('/exchange-code', { code, ...(codeVerifier ? { codeVerifier } : {}) });
      if (r.status !== 200) return html(400, `<p id="result">${esc(r.body.code)}</p>`);
      tokens.push(r.body.token);
      const sid = crypto.randomUUID();
      sessions.set(sid, r.body.token);
      return html(
        200,
        `<p id="result">Signed in as <b id="who">${esc(r.body.user.email ?? r.body.user.name)}</b> via <span id="via">${esc(r.body.user.provider)}</span></p>
<form method="post" action="/signout"><button id="signout">Sign out</button></form>`,
        { 'set-cookie': `app_sid=${sid}; Path=/; HttpOnly; SameSite=Lax` },
      );
    }
    if (url.pathname === '/signout' && req.method === 'POST') {
      const sid = /app_sid=([\w-]+)/.exec(req.headers.cookie ?? '')?.[1];
      const token = sid ? sessions.get(sid) : undefined;
      const r = token ? await api('/sign-out', {}, token) : { status: 401, body: {} };
      return html(200, page('Signed out', `<p id="result">${r.status === 200 ? 'Signed out' : 'Not signed in'}</p>`), {
        'set-cookie': 'app_sid=; Path=/; Max-Age=0',
      });
    }
    if (url.pathname === '/react') {
      const demo = { apiKey: url.searchParams.get('key') ?? env.authKey, baseURL: env.id, callbackURL: `${origin}/react` };
      return html(200, page('React demo', `<div id="root"></div><script>window.DEMO=${JSON.stringify(demo)}</script><script src="/react-app.js"></script>`));
    }
    if (url.pathname === '/react-app.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      return res.end(await reactBundle());
    }
    res.writeHead(404).end();
  });
  return {
    origin,
    tokens,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

// ---------------------------------------------------------------- page helpers

/** Waits until the embed script has sized the frame to its content (the widget reports its height as it changes). */
export async function settled(page: Page): Promise<void> {
  await page.waitForFunction(
    () => {
      const h = document.querySelector<HTMLIFrameElement>('.postgate-widget iframe')?.style.height ?? '';
      const w = window as unknown as { lastHeight?: string };
      const stable = h === w.lastHeight;
      w.lastHeight = h;
      return stable;
    },
    undefined,
    { polling: 150 },
  );
  // The frame's own compositor output lags a resize by a frame or two; a shot taken then comes out stretched.
  for (const f of page.frames()) await f.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  await page.waitForTimeout(200);
}

export async function shot(page: Page, name: string, opts: { frame?: boolean } = {}): Promise<string> {
  fs.mkdirSync(SHOTS, { recursive: true });
  const file = path.join(SHOTS, `${name}.png`);
  // The frame alone: a clip of the page (an element shot of a frame that just resized can come out rescaled).
  const box = opts.frame ? await page.locator('.postgate-widget iframe').boundingBox() : null;
  await page.screenshot({ path: file, ...(box ? { clip: box } : {}) });
  return file;
}
