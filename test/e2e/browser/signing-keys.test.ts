// The React SDK's getToken() in Chromium against the real stack: a JWT of the kept session that jose verifies
// with the JWKS, one request for concurrent callers, the same token while it is fresh and a new one shortly before
// it expires (the page's clock moved by Playwright), a session revoked elsewhere turned into the signed-out state
// at that refresh (as GET /session does at start), and nothing handed out after sign-out.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowOrigin, allStarted, codeFor, INBOX, launch, startEnv, type Env } from './harness.js';

declare global {
  interface Window {
    getToken: () => Promise<string | null>;
    signOut: () => Promise<void>;
  }
}

const here = path.dirname(fileURLToPath(import.meta.url));

/** The app: the provider, its state, and getToken() handed to the test through window. */
const APP = `
import { createRoot } from 'react-dom/client';
import { PostgateProvider, usePostgate } from '../../../auth/sdk/src/index.js';
declare global { interface Window { DEMO: { apiKey: string; baseURL: string }; events: string[]; getToken: () => Promise<string | null>; signOut: () => Promise<void> } }
window.events = [];
function App() {
  const { user, loading, getToken, signOut } = usePostgate();
  window.getToken = getToken;
  window.signOut = signOut;
  return <p id="state">{loading ? 'loading' : user ? 'signed-in' : 'signed-out'}</p>;
}
createRoot(document.getElementById('root')!).render(
  <PostgateProvider config={{ ...window.DEMO, onSignOut: () => window.events.push('signOut') }}><App /></PostgateProvider>,
);
`;

let env: Env;
let browser: Browser;
let server: http.Server;
let origin: string;
let bundle: string;

beforeAll(async () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-jwt-app-'));
  await allStarted([
    startEnv('jwtapp').then((e) => (env = e)),
    launch().then((b) => (browser = b)),
    build({
      stdin: { contents: APP, loader: 'tsx', resolveDir: here, sourcefile: 'jwt-app.tsx' },
      bundle: true,
      format: 'iife',
      jsx: 'automatic',
      target: ['es2020'],
      outfile: path.join(out, 'app.js'),
      define: { 'process.env.NODE_ENV': '"development"' },
      logLevel: 'silent',
    }).then(() => (bundle = fs.readFileSync(path.join(out, 'app.js'), 'utf8'))),
  ]);
  server = http.createServer((req, res) => {
    if (req.url === '/app.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      return res.end(bundle);
    }
    const demo = { apiKey: env.authKey, baseURL: env.id };
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      `<!doctype html><html><body><div id="root"></div><script>window.DEMO=${JSON.stringify(demo)}</script><script src="/app.js"></script></body></html>`,
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await allowOrigin(env, origin);
});
afterAll(async () => {
  await browser?.close();
  await new Promise((r) => server?.close(r));
  await env?.close();
});

/** A session made by the app's server (email code through the MX), as the provider would keep it. */
async function session(address: string): Promise<string> {
  const call = (p: string, body: unknown) => env.stack.api('POST', `/api/v1/auth${p}`, undefined, body, { 'x-service-key': env.authKey });
  const sentAt = Date.now();
  expect((await call('/sign-in/email-otp/send', { email: address })).status).toBe(200);
  const signed = await call('/sign-in/email-otp/verify', { email: address, code: await codeFor(env.sink, address, sentAt) });
  expect(signed.status).toBe(200);
  return signed.body.token;
}

let context: BrowserContext;
/** The app in a fresh browser context whose localStorage already keeps `token`, with a clock the test moves. */
async function open(token: string): Promise<{ page: Page; tokenRequests: () => number }> {
  context = await browser.newContext();
  const page = await context.newPage();
  await page.clock.install();
  let requests = 0;
  page.on('request', (r) => {
    if (r.method() === 'POST' && r.url().endsWith('/api/v1/auth/token')) requests++;
  });
  const key = `postgate.session:${env.id}:${env.authKey.slice(-8)}`;
  await page.addInitScript(([k, t]) => localStorage.setItem(k!, t!), [key, token]);
  await page.goto(origin);
  await expect.poll(() => page.locator('#state').textContent()).toBe('signed-in');
  return { page, tokenRequests: () => requests };
}

describe('getToken() in the React SDK', () => {
  it('answers a JWT of the session, shared by concurrent callers and kept while fresh, renewed before it expires', async () => {
    const token = await session(`jwt@${INBOX}`);
    const { page, tokenRequests } = await open(token);
    const [a, b, c] = await page.evaluate(() => Promise.all([window.getToken(), window.getToken(), window.getToken()]));
    expect(tokenRequests()).toBe(1);
    expect(b).toBe(a);
    expect(c).toBe(a);
    const jwks = createRemoteJWKSet(new URL(`${env.stack.url}/.well-known/jwks.json`));
    const { payload } = await jwtVerify(a!, jwks, { issuer: env.id, audience: `postgate:${env.project.slug}` });
    expect(payload.project).toBe(env.project.slug);
    // Fresh for 300 s: 4 minutes on, the same token; past 270 s of its life (30 s before exp), a new one.
    await page.clock.fastForward('04:00');
    expect(await page.evaluate(() => window.getToken())).toBe(a);
    expect(tokenRequests()).toBe(1);
    await page.clock.fastForward('00:31');
    const renewed = await page.evaluate(() => window.getToken());
    expect(renewed).not.toBe(a);
    expect(decodeJwt(renewed!).sid).toBe(payload.sid);
    expect(tokenRequests()).toBe(2);

    // Signed out in the app: no token, and no request for one.
    await page.evaluate(() => window.signOut());
    await expect.poll(() => page.locator('#state').textContent()).toBe('signed-out');
    expect(await page.evaluate(() => window.getToken())).toBeNull();
    expect(tokenRequests()).toBe(2);
    await context.close();
  });

  it('a session revoked elsewhere: the kept token until its refresh, then SESSION_INVALID is the signed-out state', async () => {
    const token = await session(`revoked@${INBOX}`);
    const { page, tokenRequests } = await open(token);
    const first = await page.evaluate(() => window.getToken());
    expect(first).toMatch(/^ey/);
    // The app's server signs the session out.
    const out = await env.stack.api('POST', '/api/v1/auth/sign-out', undefined, {}, { 'x-service-key': env.authKey, authorization: `Bearer ${token}` });
    expect(out.status).toBe(200);
    // Still fresh: the kept token (a revocation reaches a JWT at its next refresh).
    expect(await page.evaluate(() => window.getToken())).toBe(first);
    expect(tokenRequests()).toBe(1);
    await page.clock.fastForward('04:31');
    expect(await page.evaluate(() => window.getToken())).toBeNull();
    expect(tokenRequests()).toBe(2);
    await expect.poll(() => page.locator('#state').textContent()).toBe('signed-out');
    expect(await page.evaluate(() => window.events)).toEqual(['signOut']);
    expect(await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('postgate.session:')))).toEqual([]);
    await context.close();
  });
});
