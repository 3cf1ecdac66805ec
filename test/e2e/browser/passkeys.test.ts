// Passkeys in Chromium with a virtual authenticator (the DevTools protocol's WebAuthn domain): a user signed
// in by email code registers a passkey through the React SDK, signs out, and signs in with it (SDK and the
// hosted widget in its frame); then the credential is exported and imported into a second authenticator, the
// original signs in again (its counter moves on), and the clone with the older counter is refused.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { allowOrigin, allStarted, codeFor, INBOX, launch, SHOTS, settled, startDemoApp, startEnv, type DemoApp, type Env } from './harness.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** docs/auth/ only when asked (POSTGATE_SCREENSHOTS=1, a run made to refresh the documentation): CI never touches docs/. */
const SHOT_DIR = process.env.POSTGATE_SCREENSHOTS === '1' ? path.join(root, 'docs/auth') : SHOTS;
let env: Env;
let browser: Browser;
let app: { origin: string; close(): Promise<void> };
let demo: DemoApp;

/** The demo on a localhost origin (an RP ID must be a domain: localhost, not 127.0.0.1). */
async function startApp(): Promise<typeof app> {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-passkeys-'));
  await build({
    entryPoints: [path.join(root, 'test/e2e/browser/fixtures/passkeys-app.tsx')],
    bundle: true,
    format: 'iife',
    jsx: 'automatic',
    target: ['es2020'],
    outfile: path.join(out, 'app.js'),
    define: { 'process.env.NODE_ENV': '"development"' },
    logLevel: 'silent',
  });
  const js = fs.readFileSync(path.join(out, 'app.js'), 'utf8');
  const server = http.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://localhost:${(server.address() as AddressInfo).port}`;
  const config = { apiKey: env.authKey, baseURL: env.id, callbackURL: `${origin}/` };
  server.on('request', (req, res) => {
    if (req.url === '/app.js') return res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
    if (req.url === '/')
      return res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(
          `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Passkeys demo</title></head><body><div id="root"></div><script>window.DEMO=${JSON.stringify(config)}</script><script src="/app.js"></script></body></html>`,
        );
    res.writeHead(404).end();
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

beforeAll(async () => {
  await allStarted([startEnv('pkapp').then((e) => (env = e)), launch().then((b) => (browser = b))]);
  await env.stack.admin('PUT', `/admin/v1/projects/${env.project.slug}/auth/providers/passkey`, {});
  [app, demo] = await Promise.all([startApp(), startDemoApp(env)]);
  await allowOrigin(env, app.origin);
  await allowOrigin(env, demo.origin);
});
afterAll(async () => {
  await browser?.close();
  await Promise.all([app?.close(), demo?.close()]);
  await env?.close();
});

const authenticator = {
  protocol: 'ctap2',
  transport: 'internal',
  hasResidentKey: true,
  hasUserVerification: true,
  isUserVerified: true,
  automaticPresenceSimulation: true,
} as const;

const state = (page: Page) => page.locator('#state').textContent();

describe('passkeys in Chromium', () => {
  let context: BrowserContext;
  let page: Page;
  let cdp: CDPSession;
  let original: string;
  const address = `pat@${INBOX}`;

  beforeAll(async () => {
    context = await browser.newContext({ viewport: { width: 900, height: 800 } });
    page = await context.newPage();
    cdp = await context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    original = (await cdp.send('WebAuthn.addVirtualAuthenticator', { options: authenticator })).authenticatorId;
  });
  afterAll(async () => {
    await context?.close();
  });

  async function passkeySignIn(): Promise<void> {
    await page.locator('#passkey-signin').click();
  }

  it('registers a passkey as a signed-in user, signs out, and signs in with it', async () => {
    await page.goto(`${app.origin}/`);
    await page.locator('#state').filter({ hasNotText: 'loading' }).waitFor();
    await page.locator('#email').fill(address);
    const sentAt = Date.now();
    await page.locator('#send').click();
    await page.locator('#sent').waitFor();
    await page.locator('#code').fill(await codeFor(env.sink, address, sentAt));
    await page.locator('#verify').click();
    await expect.poll(() => state(page)).toBe('signed-in');
    expect(await page.locator('#via').textContent()).toBe('email');

    await page.locator('#add-passkey').click();
    await expect.poll(() => page.locator('#note').textContent()).toBe('added Test laptop');
    await expect.poll(() => page.locator('#passkeys li .name').allTextContents()).toEqual(['Test laptop']);
    const creds = (await cdp.send('WebAuthn.getCredentials', { authenticatorId: original })).credentials;
    expect(creds).toHaveLength(1);
    expect(creds[0]).toMatchObject({ isResidentCredential: true, rpId: 'localhost' });

    await page.locator('#signout').click();
    await expect.poll(() => state(page)).toBe('signed-out');
    await passkeySignIn();
    await expect.poll(() => state(page)).toBe('signed-in');
    expect(await page.locator('#who').textContent()).toBe(address);
    expect(await page.locator('#via').textContent()).toBe('passkey');
    expect(await page.evaluate(() => window.events)).toEqual([`signIn:${address}`, `signIn:${address}`]);
  });

  it('signs in with the passkey in the hosted widget (its frame on postgate’s origin, the app on another)', async () => {
    // The same tab (its virtual authenticator) on the demo app that embeds the widget. Presence held back: the
    // email field's passkey autofill (a conditional request) waits instead of completing at once.
    await cdp.send('WebAuthn.setAutomaticPresenceSimulation', { authenticatorId: original, enabled: false });
    await page.goto(`${demo.origin}/`);
    const frame = page.frameLocator('.postgate-widget iframe');
    const button = frame.locator('#pg-passkey');
    await button.waitFor();
    expect(await frame.locator('#pg-email').getAttribute('autocomplete')).toBe('email webauthn');
    expect(await page.locator('.postgate-widget iframe').getAttribute('allow')).toBe('publickey-credentials-get; publickey-credentials-create');
    await settled(page);
    fs.mkdirSync(SHOT_DIR, { recursive: true });
    const box = (await page.locator('.postgate-widget iframe').boundingBox())!;
    await page.screenshot({ path: path.join(SHOT_DIR, 'passkeys-widget.png'), clip: box });

    await cdp.send('WebAuthn.setAutomaticPresenceSimulation', { authenticatorId: original, enabled: true });
    await button.click();
    await page.waitForURL(/\/callback/);
    await expect.poll(() => page.locator('#result').textContent()).toMatch(/Signed in as/);
    expect(await page.locator('#who').textContent()).toBe(address);
    const session = await env.stack.api('GET', '/api/v1/auth/session', undefined, undefined, {
      'x-service-key': env.authKey,
      authorization: `Bearer ${demo.tokens.at(-1)}`,
    });
    expect(session.body.user.provider).toBe('passkey');
  });

  it('refuses a cloned credential: the clone’s counter does not advance past the original’s', async () => {
    const [exported] = (await cdp.send('WebAuthn.getCredentials', { authenticatorId: original })).credentials;
    expect(exported!.signCount).toBeGreaterThan(0);
    // The original signs in once more: its counter (and the server's) moves past the exported copy's.
    await page.goto(`${app.origin}/`);
    await expect.poll(() => state(page)).toBe('signed-in');
    await page.locator('#signout').click();
    await expect.poll(() => state(page)).toBe('signed-out');
    await passkeySignIn();
    await expect.poll(() => state(page)).toBe('signed-in');
    await page.locator('#signout').click();
    await expect.poll(() => state(page)).toBe('signed-out');

    // The clone: the exported credential (older counter) in another authenticator.
    await cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId: original });
    const clone = (await cdp.send('WebAuthn.addVirtualAuthenticator', { options: authenticator })).authenticatorId;
    await cdp.send('WebAuthn.addCredential', { authenticatorId: clone, credential: exported! });
    await passkeySignIn();
    await expect.poll(() => page.locator('#error').getAttribute('data-code')).toBe('INVALID_CREDENTIAL');
    expect(await state(page)).toBe('signed-out');
    expect(await page.locator('#error').textContent()).toMatch(/counter/);
  });

  it('removes the passkey from the SDK (a DELETE from the browser, CORS preflight included)', async () => {
    await page.goto(`${app.origin}/`);
    await page.locator('#state').filter({ hasNotText: 'loading' }).waitFor();
    await page.locator('#email').fill(address);
    const sentAt = Date.now();
    await page.locator('#send').click();
    await page.locator('#sent').waitFor();
    await page.locator('#code').fill(await codeFor(env.sink, address, sentAt));
    await page.locator('#verify').click();
    await expect.poll(() => state(page)).toBe('signed-in');
    await expect.poll(() => page.locator('#passkeys li .name').allTextContents()).toEqual(['Test laptop']);
    await page.locator('#passkeys li .remove').click();
    await expect.poll(() => page.locator('#passkeys li').count()).toBe(0);
  });
});
