// Magic links in Chromium: the embedded widget offers "Email me a sign-in link", the email reaches
// the MX, and the link opened in the browser that asked (its confirm page, then the app's callback)
// signs in; the same kind of link opened in another browser lands on the callback with a code that
// browser cannot exchange (no verifier): not signed in. The React SDK's sendMagicLink, with the link
// opened in a new tab as a mail client opens it. Also a screenshot of the confirm page.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, FrameLocator, Page } from 'playwright-core';
import { allowOrigin, allStarted, INBOX, launch, startDemoApp, startEnv, type DemoApp, type Env } from './harness.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** docs/auth/ only when asked (POSTGATE_SCREENSHOTS=1, a run made to refresh the documentation), as the console's shots: CI never touches docs/. */
const SHOT_DIR = process.env.POSTGATE_SCREENSHOTS === '1' ? path.join(root, 'docs', 'auth') : path.join(root, 'test-results', 'browser');
const LINK = /https?:\/\/[^\s"<>]+\/api\/v1\/auth\/magic-link\/[A-Za-z0-9_-]{43}/;

let env: Env;
let app: DemoApp;
let browser: Browser;

beforeAll(async () => {
  await allStarted([startEnv('mlink').then((e) => (env = e)), launch().then((b) => (browser = b))]);
  app = await startDemoApp(env);
  await allowOrigin(env, app.origin);
  await env.stack.admin('PUT', `/admin/v1/projects/${env.project.slug}/auth/providers/email`, { methods: ['otp', 'magic_link'] });
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await env?.close();
});

/** The sign-in link in the newest message the MX accepted for `to` after `after`. */
async function linkFor(to: string, after: number): Promise<string> {
  const until = Date.now() + 20_000;
  while (Date.now() < until) {
    const m = [...env.sink.messages].reverse().find((x) => x.receivedAt >= after && x.rcptTo.includes(to));
    if (m) {
      const url = LINK.exec((await simpleParser(m.raw)).text ?? '')?.[0];
      if (url) return url;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no sign-in link reached ${to}`);
}

async function openApp(context: BrowserContext): Promise<{ page: Page; widget: FrameLocator }> {
  const page = await context.newPage();
  await page.goto(`${app.origin}/`);
  const widget = page.frameLocator('#signin iframe');
  await widget.locator('h1').waitFor();
  await page.waitForFunction(() => document.querySelector('.postgate-widget')?.getAttribute('data-state') === 'ready');
  return { page, widget };
}

/** Asks for a link in the widget; answers it as the MX received it. */
async function askLink(widget: FrameLocator, address: string): Promise<string> {
  await widget.getByLabel('Email', { exact: true }).fill(address);
  const sentAt = Date.now();
  await widget.getByRole('button', { name: 'Email me a sign-in link' }).click();
  await expect.poll(() => widget.locator('#pg-link-sent').textContent()).toContain(address);
  expect(await widget.getByRole('heading', { name: 'Check your email' }).isVisible()).toBe(true);
  return linkFor(address, sentAt);
}

describe('magic links in the widget', () => {
  it('signs in the browser that asked; a forwarded link signs in nobody elsewhere', async () => {
    const mine = await browser.newContext({ viewport: { width: 1000, height: 800 }, locale: 'en-US' });
    const other = await browser.newContext({ viewport: { width: 480, height: 360 }, locale: 'en-US' });
    try {
      const { page, widget } = await openApp(mine);
      // Both actions side by side when codes are on too.
      expect(await widget.getByRole('button', { name: 'Send code' }).isVisible()).toBe(true);

      // A link forwarded to (or stolen by) another browser: its confirm page works, its sign-in does not.
      const forwarded = await askLink(widget, `fwd@${INBOX}`);
      // The embedding page kept its verifier for the new tab the email opens (same browser, any tab).
      expect(await page.evaluate(() => localStorage.getItem('postgate.magic-link-verifier'))).toMatch(/^[\w-]{43}$/);
      const stranger = await other.newPage();
      await stranger.goto(forwarded);
      await stranger.getByRole('button', { name: 'Sign in' }).waitFor();
      expect(await stranger.locator('#pg-confirm').textContent()).toContain(`fwd@${INBOX}`);
      fs.mkdirSync(SHOT_DIR, { recursive: true });
      await stranger.screenshot({ path: path.join(SHOT_DIR, 'magic-link-confirm.png') });
      const tokensBefore = app.tokens.length;
      await stranger.getByRole('button', { name: 'Sign in' }).click();
      await stranger.waitForURL(`${app.origin}/callback**`);
      expect(await stranger.locator('#result').textContent()).toBe('INVALID_CODE');
      expect(app.tokens.length).toBe(tokensBefore);

      // The asker's own link, opened in the browser that asked: confirm, then back on the app signed in.
      await widget.locator('#pg-link-change').click();
      const own = await askLink(widget, `ann@${INBOX}`);
      await page.goto(own);
      expect(await page.title()).toBe('Sign in to Acme');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${app.origin}/callback**`);
      expect(await page.locator('#who').textContent()).toBe(`ann@${INBOX}`);
      expect(await page.locator('#via').textContent()).toBe('email');
      expect(app.tokens.length).toBe(tokensBefore + 1);

      // Spent: opening it again shows a page saying so, and signs nobody in.
      await page.goto(own);
      expect(await page.locator('#pg-refusal').getAttribute('data-reason')).toBe('used');
    } finally {
      await mine.close();
      await other.close();
    }
  });

  it('is the email step’s only action when codes are off', async () => {
    await env.stack.admin('PUT', `/admin/v1/projects/${env.project.slug}/auth/providers/email`, { methods: ['magic_link'] });
    const context = await browser.newContext({ locale: 'ru-RU' });
    try {
      const { widget } = await openApp(context);
      await expect.poll(() => widget.getByRole('button', { name: 'Прислать ссылку для входа' }).isVisible()).toBe(true);
      expect(await widget.getByRole('button', { name: 'Получить код' }).count()).toBe(0);
      await widget.getByLabel('Электронная почта', { exact: true }).fill(`solo@${INBOX}`);
      const sentAt = Date.now();
      // Enter submits the form: a link, not a code.
      await widget.getByLabel('Электронная почта', { exact: true }).press('Enter');
      await expect.poll(() => widget.locator('#pg-link-sent').textContent()).toContain(`solo@${INBOX}`);
      expect(await linkFor(`solo@${INBOX}`, sentAt)).toMatch(LINK);
    } finally {
      await context.close();
      await env.stack.admin('PUT', `/admin/v1/projects/${env.project.slug}/auth/providers/email`, { methods: ['otp', 'magic_link'] });
    }
  });
});

// A React app using the SDK's sendMagicLink: its own page, so the callback is the provider's svc_code path.
const REACT_APP = `
import { StrictMode, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { PostgateProvider, usePostgate } from '../../../auth/sdk/src/index.js';
function App() {
  const { user, loading, errorCode, sendMagicLink } = usePostgate();
  const [sent, setSent] = useState('');
  if (loading) return <p id="loading">Loading</p>;
  if (user) return <p>Signed in as <b id="who">{user.email}</b></p>;
  return (
    <form onSubmit={async (e) => { e.preventDefault(); setSent((await sendMagicLink(e.currentTarget.email.value)).status); }}>
      <p id="error">{errorCode ?? ''}</p>
      <input name="email" id="email" />
      <button type="submit" id="send">Email me a link</button>
      <p id="sent">{sent}</p>
    </form>
  );
}
createRoot(document.getElementById('root')).render(<StrictMode><PostgateProvider config={window.DEMO}><App /></PostgateProvider></StrictMode>);
`;

async function startReactApp(): Promise<{ origin: string; close(): Promise<void> }> {
  const out = await build({
    stdin: { contents: REACT_APP, resolveDir: path.join(root, 'test/e2e/browser'), loader: 'tsx' },
    bundle: true,
    write: false,
    format: 'iife',
    jsx: 'automatic',
    target: ['es2020'],
    define: { 'process.env.NODE_ENV': '"development"' },
    logLevel: 'silent',
  });
  const js = out.outputFiles[0]!.text;
  const server = http.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const demo = { apiKey: env.authKey, baseURL: env.id, callbackURL: `${origin}/` };
  server.on('request', (req, res) => {
    if (req.url === '/app.js') return res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      `<!doctype html><html><head><meta charset="utf-8"><title>React app</title></head><body><div id="root"></div><script>window.DEMO=${JSON.stringify(demo)}</script><script src="/app.js"></script></body></html>`,
    );
  });
  return {
    origin,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

describe('magic links in the React SDK', () => {
  it('signs in the tab the email opens, in the browser that asked; not in another browser', async () => {
    const react = await startReactApp();
    await allowOrigin(env, react.origin);
    const mine = await browser.newContext();
    const other = await browser.newContext();
    try {
      const asking = await mine.newPage();
      await asking.goto(`${react.origin}/`);
      const ask = async (address: string) => {
        await asking.locator('#email').fill(address);
        const sentAt = Date.now();
        await asking.locator('#send').click();
        await expect.poll(() => asking.locator('#sent').textContent()).toBe('link_sent');
        return linkFor(address, sentAt);
      };
      // Another browser: the confirm page redirects to the app, whose provider refuses a code it did not ask for.
      const forwarded = await ask(`react-fwd@${INBOX}`);
      const stranger = await other.newPage();
      await stranger.goto(forwarded);
      await stranger.getByRole('button', { name: 'Sign in' }).click();
      await stranger.waitForURL(`${react.origin}/**`);
      await expect.poll(() => stranger.locator('#error').textContent()).toBe('SIGN_IN_NOT_STARTED');

      // A new tab of the asking browser (as a mail client opens links): its sessionStorage is empty, the kept verifier works.
      await asking.reload();
      await asking.locator('#email').waitFor();
      const own = await ask(`react@${INBOX}`);
      const tab = await mine.newPage();
      await tab.goto(own);
      await tab.getByRole('button', { name: 'Sign in' }).click();
      await tab.waitForURL(`${react.origin}/**`);
      await expect.poll(() => tab.locator('#who').textContent()).toBe(`react@${INBOX}`);
      expect(new URL(tab.url()).searchParams.get('svc_code')).toBeNull();
      // Exchanged: the kept verifier is gone.
      expect(await tab.evaluate(() => localStorage.getItem('postgate.magic-link-verifier'))).toBeNull();
    } finally {
      await mine.close();
      await other.close();
      await react.close();
    }
  });
});
