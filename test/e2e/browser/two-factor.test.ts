// Two-factor through the React SDK in Chromium: a user turns on an authenticator app in the app
// (enrolTwoFactor / confirmTwoFactor, a code this test computes), signs out, signs in again with an
// email code and is held: the app shows the code prompt (usePostgate().twoFactor), the user types the
// code, and is signed in. The same for a Google sign-in, whose svc_code exchange is held, with a wrong
// code first. Control's clock is moved (the test clock route) so each code is typed well inside its
// step; the codes are computed for that clock.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { PostgateClient, PostgateError, pendingOf } from '../../../auth/sdk/src/index.js';
import { stepAt, totpAt } from '../../../auth/two-factor/totp.js';
import { setClock } from '../auth/setup.js';
import { allowOrigin, allStarted, codeFor, INBOX, launch, startEnv, type Env } from './harness.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** docs/auth/ only when asked (POSTGATE_SCREENSHOTS=1, a run made to refresh the documentation): CI never touches docs/. */
const PROMPT_SHOT = path.join(root, process.env.POSTGATE_SCREENSHOTS === '1' ? 'docs/auth' : 'test-results/browser', 'two-factor.png');

let env: Env;
let browser: Browser;
let app: { origin: string; close(): Promise<void> };
let offset = 0;
const serverNow = () => Date.now() + offset;

/** The demo (fixtures/two-factor-app.tsx with the SDK's sources) on its own loopback origin. */
async function startApp(): Promise<typeof app> {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-2fa-'));
  await build({
    entryPoints: [path.join(root, 'test/e2e/browser/fixtures/two-factor-app.tsx')],
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
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const demo = { apiKey: env.authKey, baseURL: env.id, callbackURL: `${origin}/` };
  server.on('request', (req, res) => {
    if (req.url === '/app.js') return res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
    if (req.url?.startsWith('/?') || req.url === '/')
      return res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(
          `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Two-factor demo</title></head><body style="font-family:system-ui;margin:16px"><div id="root"></div><script>window.TWO_FACTOR_DEMO=${JSON.stringify(demo)}</script><script src="/app.js"></script></body></html>`,
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
  await allStarted([startEnv('tfapp').then((e) => (env = e)), launch().then((b) => (browser = b))]);
  await env.stack.admin('PATCH', `/admin/v1/projects/${env.project.slug}/auth/settings`, { twoFactor: 'optional' });
  app = await startApp();
  await allowOrigin(env, app.origin);
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await env?.close();
});

/** Moves control's clock forward by `ms`, then on to a step with at least 20 s left. */
async function advance(ms = 0): Promise<void> {
  offset += ms;
  const into = serverNow() % 30_000;
  if (into > 10_000) offset += 30_000 - into + 1000;
  await setClock(env.stack, offset);
}
const codeNow = (secret: string) => totpAt(secret, stepAt(serverNow()));

let context: BrowserContext;
async function open(): Promise<Page> {
  context = await browser.newContext({ viewport: { width: 480, height: 420 } });
  const page = await context.newPage();
  await page.goto(`${app.origin}/`);
  await page.locator('#state').filter({ hasNotText: 'loading' }).waitFor();
  return page;
}
const state = (page: Page) => page.locator('#state').textContent();

async function emailSignIn(page: Page, address: string): Promise<void> {
  await page.locator('#email').fill(address);
  const sentAt = Date.now();
  await page.locator('#send').click();
  await page.locator('#sent').waitFor();
  await page.locator('#code').fill(await codeFor(env.sink, address, sentAt));
  await page.locator('#verify').click();
}

/** Turns on TOTP from the signed-in view; its secret. */
async function enrolInApp(page: Page): Promise<string> {
  await page.locator('#tf-enrol').click();
  const secret = (await page.locator('#tf-secret').textContent())!;
  expect(secret).toMatch(/^[A-Z2-7]{32}$/);
  expect(await page.locator('#tf-qr').getAttribute('src')).toMatch(/^data:image\/svg\+xml;base64,/);
  await advance();
  await page.locator('#tf-confirm-code').fill(codeNow(secret));
  await page.locator('#tf-confirm').click();
  await expect.poll(() => page.locator('#tf-backup li').count()).toBe(10);
  return secret;
}

describe('two-factor through the React SDK', () => {
  it('a user with TOTP signs in with an email code, sees the code prompt, types the code, and is signed in', async () => {
    const page = await open();
    const address = `tara@${INBOX}`;
    await emailSignIn(page, address);
    await expect.poll(() => state(page)).toBe('signed-in');
    const secret = await enrolInApp(page);
    await page.locator('#signout').click();
    await expect.poll(() => state(page)).toBe('signed-out');

    await advance(61_000); // the email code's resend cooldown
    await emailSignIn(page, address);
    await expect.poll(() => state(page)).toBe('two-factor');
    await page.locator('#tf-prompt').waitFor();
    expect(await page.locator('#error').count()).toBe(0);
    // No session was handed out: nothing kept, no onSignIn.
    expect(
      await page.evaluate(() =>
        Object.keys(localStorage)
          .filter((k) => k.startsWith('postgate.session:'))
          .map((k) => localStorage.getItem(k)),
      ),
    ).toEqual([]);
    expect(await page.evaluate(() => (window as unknown as { tfEvents: string[] }).tfEvents)).toEqual([`signIn:${address}`, 'signOut']);
    fs.mkdirSync(path.dirname(PROMPT_SHOT), { recursive: true });
    await page.locator('#tf-prompt').screenshot({ path: PROMPT_SHOT });

    await page.locator('#tf-code').fill(codeNow(secret));
    await page.locator('#tf-verify').click();
    await expect.poll(() => state(page)).toBe('signed-in');
    expect(await page.locator('#who').textContent()).toBe(address);
    expect(await page.evaluate(() => (window as unknown as { tfEvents: string[] }).tfEvents)).toEqual([`signIn:${address}`, 'signOut', `signIn:${address}`]);
    const token = await page.evaluate(() => Object.entries(localStorage).find(([k]) => k.startsWith('postgate.session:'))?.[1] ?? null);
    const s = await env.stack.api('GET', '/api/v1/auth/session', undefined, undefined, { 'x-service-key': env.authKey, authorization: `Bearer ${token}` });
    expect(s.status).toBe(200);
    await context.close();
  });

  it("an OAuth return's exchange is held too: a wrong code shows the error and keeps the prompt, the right one signs in", async () => {
    env.idp.loginAs({ sub: 'g-tf-1', email: 'tf.user@gmail.com', email_verified: true, name: 'Tefa' });
    const page = await open();
    await page.locator('button[data-provider="google"]').click();
    await expect.poll(() => state(page)).toBe('signed-in');
    const secret = await enrolInApp(page);
    await page.locator('#signout').click();
    await expect.poll(() => state(page)).toBe('signed-out');

    await page.locator('button[data-provider="google"]').click();
    await expect.poll(() => state(page)).toBe('two-factor');
    expect(page.url()).toBe(`${app.origin}/`);
    await advance(30_000); // the step after the confirming one
    const right = codeNow(secret);
    await page.locator('#tf-code').fill(right === '000000' ? '111111' : '000000');
    await page.locator('#tf-verify').click();
    await expect.poll(() => page.locator('#error').getAttribute('data-code')).toBe('INVALID_CODE');
    expect(await state(page)).toBe('two-factor');
    await page.locator('#tf-code').fill(right);
    await page.locator('#tf-verify').click();
    await expect.poll(() => state(page)).toBe('signed-in');
    expect(await page.locator('#via').textContent()).toBe('google');
    await context.close();
  });

  it('the low-level client: every two-factor call, and pendingOf() reading the held sign-in of a PostgateError', async () => {
    const client = new PostgateClient({ apiKey: env.project.keys.live, baseURL: env.stack.url });
    const address = `lowlevel@${INBOX}`;
    const emailCode = async () => {
      const sentAt = Date.now();
      await client.sendEmailOTP(address);
      return codeFor(env.sink, address, sentAt);
    };
    const { token } = await client.verifyEmailOTP(address, await emailCode());
    expect(await client.getTwoFactor(token)).toEqual({ mode: 'optional', totp: false, confirmedAt: null, backupCodesLeft: 0 });
    const setup = await client.setupTotp(token);
    await advance();
    const { backupCodes } = await client.confirmTotp(token, codeNow(setup.secret));
    expect(backupCodes).toHaveLength(10);
    expect((await client.getTwoFactor(token)).totp).toBe(true);

    await advance(61_000);
    const held = await client.verifyEmailOTP(address, await emailCode()).then(
      () => null,
      (e: unknown) => e,
    );
    expect(held).toBeInstanceOf(PostgateError);
    expect(held).toMatchObject({ code: 'TWO_FACTOR_REQUIRED', status: 401 });
    const pending = pendingOf(held)!;
    expect(pending).toMatchObject({ pendingToken: expect.stringMatching(/^pgp_/), methods: ['totp', 'backup_code'], enrol: false });
    expect(pendingOf(new PostgateError('INVALID_CODE', 'x', 400))).toBeNull();
    const wrong = await client.verifyTwoFactor(pending.pendingToken, 'aaaaa-aaaaa').catch((e: PostgateError) => e);
    expect(wrong).toMatchObject({ code: 'INVALID_CODE', status: 400 });
    const signed = await client.verifyTwoFactor(pending.pendingToken, backupCodes[0]!, 'backup_code');
    expect(signed.token).toMatch(/^pgs_/);
    expect((await client.getTwoFactor(signed.token)).backupCodesLeft).toBe(9);

    const fresh = await client.regenerateBackupCodes(signed.token, backupCodes[1]!);
    expect(fresh.backupCodes).toHaveLength(10);
    expect(await client.disableTwoFactor(signed.token, fresh.backupCodes[0]!)).toEqual({ success: true });
    expect((await client.getTwoFactor(signed.token)).totp).toBe(false);
    await expect(client.enrolTwoFactor('pgp_unknown')).rejects.toMatchObject({ code: 'INVALID_CODE' });
    await expect(client.confirmTwoFactorEnrolment('pgp_unknown', '123456')).rejects.toMatchObject({ code: 'INVALID_CODE' });
  });
});
