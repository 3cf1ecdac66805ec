// The React SDK (auth/sdk) in a real browser: a demo app on its own loopback
// origin talks to postgate on another with an auth-scope key; email codes
// arrive at the MX, OAuth goes through oidc-provider as Google. Then the
// low-level client against the same stack: every call of the spec's table
// (SMS included) and every error the API can give, as PostgateError.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { codeChallengeOf, createCodeVerifier, PostgateClient, PostgateError } from '../../../auth/sdk/src/index.js';
import { allowOrigin, allStarted, codeFor, INBOX, launch, shot, startDemoApp, startEnv, type DemoApp, type Env } from './harness.js';
import { setClock, signedWidget, TEST_BOT } from '../auth/setup.js';
import { statusOf, type ErrorCode } from '../../../core/errors.js';
import { startSmsGateway, type SmsGateway } from '../auth/peers.js';

let env: Env;
let app: DemoApp;
let stranger: DemoApp;
let browser: Browser;
let sms: SmsGateway;

beforeAll(async () => {
  await allStarted([startEnv('sdkapp').then((e) => (env = e)), launch().then((b) => (browser = b)), startSmsGateway().then((g) => (sms = g))]);
  [app, stranger] = await Promise.all([startDemoApp(env), startDemoApp(env)]);
  await allowOrigin(env, app.origin);
});
afterAll(async () => {
  await browser?.close();
  await Promise.all([app?.close(), stranger?.close(), sms?.close()]);
  await env?.close();
});

let context: BrowserContext;
async function open(origin = app.origin, query = ''): Promise<Page> {
  context = await browser.newContext({ viewport: { width: 900, height: 800 } });
  const page = await context.newPage();
  await page.goto(`${origin}/react${query}`);
  await page.locator('#state').filter({ hasNotText: 'loading' }).waitFor();
  return page;
}

const state = (page: Page) => page.locator('#state').textContent();
const events = (page: Page) => page.evaluate(() => window.events);
const keptToken = (page: Page) => page.evaluate(() => Object.entries(localStorage).find(([k]) => k.startsWith('postgate.session:'))?.[1] ?? null);
const sessionOf = (token: string) =>
  env.stack.api('GET', '/api/v1/auth/session', undefined, undefined, { 'x-service-key': env.authKey, authorization: `Bearer ${token}` });

async function emailSignIn(page: Page, address: string): Promise<void> {
  await page.locator('#email').fill(address);
  const sentAt = Date.now();
  await page.locator('#send').click();
  await page.locator('#sent').waitFor();
  await page.locator('#code').fill(await codeFor(env.sink, address, sentAt));
  await page.locator('#verify').click();
}

describe('React SDK in the browser', () => {
  it('signs in with an email code, keeps the session across a reload, and signs out', async () => {
    const page = await open();
    await shot(page, 'sdk-buttons');
    const address = `sam@${INBOX}`;
    await emailSignIn(page, address);
    await expect.poll(() => state(page)).toBe('signed-in');
    expect(await page.locator('#who').textContent()).toBe(address);
    expect(await page.locator('#via').textContent()).toBe('email');
    expect(Date.parse((await page.locator('#expires').textContent())!)).toBeGreaterThan(Date.now());
    expect(await events(page)).toEqual([`signIn:${address}`]);

    await page.reload();
    await expect.poll(() => state(page)).toBe('signed-in');
    expect(await page.locator('#who').textContent()).toBe(address);

    const token = (await keptToken(page))!;
    expect((await sessionOf(token)).status).toBe(200);
    await page.locator('#signout').click();
    await expect.poll(() => state(page)).toBe('signed-out');
    expect(await events(page)).toEqual(['signOut']);
    expect(await keptToken(page)).toBeNull();
    expect((await sessionOf(token)).body.code).toBe('SESSION_INVALID');
    await context.close();
  });

  it('signs in through OAuth with <Button provider="google">: back on the page, svc_code is exchanged once and leaves the address bar', async () => {
    env.idp.loginAs({ sub: 'g-200', email: 'greta@gmail.com', email_verified: true, name: 'Greta' });
    const page = await open();
    const landed: string[] = [];
    page.on('framenavigated', (f) => {
      if (f === page.mainFrame()) landed.push(f.url());
    });
    await page.locator('button[data-provider="google"]').click();
    await page.waitForURL(/svc_code=/);
    await expect.poll(() => state(page)).toBe('signed-in');
    expect(await page.locator('#who').textContent()).toBe('greta@gmail.com');
    expect(await page.locator('#via').textContent()).toBe('google');
    expect(page.url()).toBe(`${app.origin}/react`);
    expect(landed.some((u) => u.includes('svc_code='))).toBe(true);
    // StrictMode ran the effect twice; a second exchange would have revoked the session.
    expect(await events(page)).toEqual(['signIn:greta@gmail.com']);
    expect((await sessionOf((await keptToken(page))!)).status).toBe(200);
    await page.locator('#signout').click();
    await expect.poll(() => state(page)).toBe('signed-out');
    await context.close();
  });

  it('exchanges only a svc_code its own tab started (login CSRF): a lured victim sees an error and nobody is signed in', async () => {
    // The attacker signs in with Google in their own browser; the SDK's exchange is held back, the URL kept.
    env.idp.loginAs({ sub: 'g-mallory-sdk', email: 'mallory.sdk@gmail.com', email_verified: true, name: 'Mallory' });
    const attacker = await open();
    const attackerContext = context;
    const verifier = await attacker.evaluate(() => sessionStorage.getItem('postgate.code-verifier'));
    expect(verifier).toBeNull();
    await attacker.route('**/api/v1/auth/exchange-code', (route) => route.abort());
    const landed: string[] = [];
    attacker.on('framenavigated', (f) => {
      if (f === attacker.mainFrame()) landed.push(f.url());
    });
    await attacker.locator('button[data-provider="google"]').click();
    // The SDK takes svc_code out of the address bar at once: the URL as it landed is the lure.
    await expect.poll(() => landed.find((u) => u.includes('svc_code='))).toBeTruthy();
    const lure = landed.find((u) => u.includes('svc_code='))!;
    // The start stored this tab's verifier; its hash went to postgate.
    expect(await attacker.evaluate(() => sessionStorage.getItem('postgate.code-verifier'))).toMatch(/^[\w-]{43}$/);

    const exchanges: string[] = [];
    const victim = await open();
    victim.on('request', (r) => {
      if (r.url().endsWith('/exchange-code')) exchanges.push(r.url());
    });
    await victim.goto(lure);
    await victim.locator('#error').waitFor();
    expect(await victim.locator('#error').getAttribute('data-code')).toBe('SIGN_IN_NOT_STARTED');
    expect(await state(victim)).toBe('signed-out');
    expect(exchanges).toEqual([]);
    expect(new URL(victim.url()).searchParams.has('svc_code')).toBe(false);
    await context.close();

    // Even a client that skips that check cannot finish it: the server wants the starting tab's verifier.
    const code = new URL(lure).searchParams.get('svc_code')!;
    const bare = await env.stack.api('POST', '/api/v1/auth/exchange-code', undefined, { code }, { 'x-service-key': env.authKey });
    expect(bare.body.code).toBe('INVALID_CODE');
    const other = await env.stack.api(
      'POST',
      '/api/v1/auth/exchange-code',
      undefined,
      { code, codeVerifier: 'v'.repeat(43) },
      { 'x-service-key': env.authKey },
    );
    expect(other.body.code).toBe('INVALID_CODE');
    // The starting tab finishes it.
    await attacker.unroute('**/api/v1/auth/exchange-code');
    await attacker.goto(lure);
    await expect.poll(() => state(attacker)).toBe('signed-in');
    expect(await attacker.locator('#who').textContent()).toBe('mallory.sdk@gmail.com');
    expect(await attacker.evaluate(() => sessionStorage.getItem('postgate.code-verifier'))).toBeNull();
    await attackerContext.close();
  });

  it('surfaces API errors as `error`: wrong code, provider not enabled, bad key, origin not allowed, OAuth error', async () => {
    const errorOf = async (page: Page) => {
      await page.locator('#error').waitFor();
      return { code: await page.locator('#error').getAttribute('data-code'), text: await page.locator('#error').textContent() };
    };

    let page = await open();
    await page.locator('#email').fill(`una@${INBOX}`);
    await page.locator('#send').click();
    await page.locator('#sent').waitFor();
    await page.locator('#code').fill('000000');
    await page.locator('#verify').click();
    expect(await errorOf(page)).toEqual({ code: 'INVALID_CODE', text: 'The code is not valid' });
    await page.locator('button[data-provider="vk"]').click();
    expect(await errorOf(page)).toEqual({ code: 'PROVIDER_NOT_ENABLED', text: 'vk with method oauth is not enabled for this project' });
    await context.close();

    page = await open(app.origin, '?key=pg_live_not-a-key');
    await page.locator('#email').fill(`una@${INBOX}`);
    await page.locator('#send').click();
    expect(await errorOf(page)).toEqual({ code: 'INVALID_API_KEY', text: 'Invalid API key' });
    await context.close();

    // The same key from a page whose origin the project does not allow: refused, and the page can read why.
    page = await open(stranger.origin);
    await page.locator('#email').fill(`una@${INBOX}`);
    await page.locator('#send').click();
    const refused = await errorOf(page);
    expect(refused.code).toBe('REDIRECT_NOT_ALLOWED');
    expect(refused.text).toContain(`origin ${stranger.origin} is not allowed`);
    await context.close();

    // The provider sent the user back with an error: shown, and taken out of the address.
    page = await open(app.origin, '?error=access_denied');
    expect(await errorOf(page)).toEqual({ code: 'OAUTH_ERROR', text: 'Sign-in did not complete: access_denied' });
    expect(page.url()).toBe(`${app.origin}/react`);
    await context.close();
  });
});

describe('low-level client (Node) against the stack', () => {
  let api: PostgateClient;
  const fails = async (p: Promise<unknown>): Promise<PostgateError> => {
    try {
      await p;
    } catch (err) {
      expect(err).toBeInstanceOf(PostgateError);
      return err as PostgateError;
    }
    throw new Error('expected a PostgateError');
  };

  beforeAll(async () => {
    api = new PostgateClient({ apiKey: env.authKey, baseURL: env.stack.url });
    const slug = env.project.slug;
    const put = (id: string, body: Record<string, unknown>) => env.stack.admin('PUT', `/admin/v1/projects/${slug}/auth/providers/${id}`, body);
    await Promise.all([
      put('google', { methods: ['oauth', 'id_token'] }),
      put('sms', { apiUrl: sms.url, clientSecret: 'sms-token' }),
      put('telegram', { botToken: TEST_BOT, methods: ['widget'] }),
      put('yandex', { clientId: 'ya-app', methods: ['instant_token'], denyCidrs: ['127.0.0.0/8'] }),
    ]);
  });

  it('makes every call of the spec table', async () => {
    const { providers } = await api.getProviders();
    expect(providers.map((p) => p.id)).toEqual(expect.arrayContaining(['google', 'email', 'sms', 'telegram']));

    // A server-side start binds the sign-in as a browser would (required by default): it keeps the verifier.
    const { url } = await api.signIn('google', { callbackURL: `${app.origin}/cb`, codeChallenge: await codeChallengeOf(createCodeVerifier()) });
    expect(new URL(url).origin).toBe(new URL(env.idp.issuer).origin);

    const idToken = await env.idp.idToken('google-client', { sub: 'g-300', email: 'tok@gmail.com', email_verified: true, name: 'Tok' });
    const byToken = await api.verifyToken('google', 'id_token', { credential: idToken });
    expect(byToken.user).toMatchObject({ email: 'tok@gmail.com', name: 'Tok' });

    const tg = await api.signInTelegramWidget(
      signedWidget({ id: 4242, first_name: 'Tg', username: 'tguser', auth_date: Math.floor(Date.now() / 1000) }) as never,
    );
    expect(tg.user).toMatchObject({ name: 'Tg' });

    const address = `cli@${INBOX}`;
    const sentAt = Date.now();
    expect(await api.sendEmailOTP(address)).toMatchObject({ success: true });
    const byEmail = await api.verifyEmailOTP(address, await codeFor(env.sink, address, sentAt));
    expect(byEmail.user).toMatchObject({ email: address });

    const phone = '+79991234567';
    expect(await api.sendSmsOTP(phone)).toMatchObject({ success: true });
    const text = sms.messages.at(-1)!;
    expect(text).toMatchObject({ to: phone, auth: 'Bearer sms-token' });
    const bySms = await api.verifySmsOTP(phone, /(\d{6})/.exec(text.text)![1]!);
    expect(bySms.user).toMatchObject({ phone });

    const s = await api.getSession(bySms.token);
    expect(s.session).toEqual({ id: expect.any(String), expiresAt: expect.any(String) });
    expect(s.user).toMatchObject({ id: bySms.user.id, provider: 'sms' });
    expect(await api.signOut(bySms.token)).toEqual({ success: true });

    const hosted = await api.getHostedConfig(env.project.slug);
    expect(hosted).toMatchObject({ name: 'Acme', codeLength: 6, resendAfterSeconds: 60 });
    expect(hosted.providers.map((p) => p.id)).toEqual(['google', 'email']);
    await allowOrigin(env, 'https://app.example.com');
    // Keyless hosted calls must come from a browser page (an Origin header): from Node they are refused.
    await expect(api.hostedStart({ slug: env.project.slug, provider: 'google', redirectUri: 'https://app.example.com/cb' })).rejects.toMatchObject({
      code: 'REDIRECT_NOT_ALLOWED',
    });
  });

  it("gives every API error as PostgateError with the API's code and message", async () => {
    const seen: Record<string, PostgateError> = {};
    const take = async (p: Promise<unknown>) => {
      const e = await fails(p);
      seen[e.code] = e;
      return e;
    };
    await take(new PostgateClient({ apiKey: 'pg_live_nope', baseURL: env.stack.url }).getProviders());
    await take(api.sendEmailOTP('not an address'));
    const address = `err@${INBOX}`;
    await api.sendEmailOTP(address);
    const limited = await take(api.sendEmailOTP(address));
    expect(limited.retryAfter).toBeGreaterThan(0);
    await take(api.verifyEmailOTP(address, '000000'));
    await setClock(env.stack, 11 * 60_000);
    try {
      await take(api.verifyEmailOTP(address, '000001'));
    } finally {
      await setClock(env.stack, 0);
    }
    const other = `err2@${INBOX}`;
    await api.sendEmailOTP(other);
    for (let i = 0; i < 5; i++) await fails(api.verifyEmailOTP(other, '999999')).then((e) => (seen[e.code] = e));
    await take(api.getSession('pgs_nothing'));
    await take(api.signIn('google', { callbackURL: 'https://elsewhere.example/cb' }));
    await take(api.signIn('vk', { callbackURL: `${app.origin}/cb` }));
    await take(api.verifyToken('google', 'id_token', { credential: 'not-a-jwt' }));
    await take(api.verifyToken('yandex', 'instant_token', { credential: 'y0_token' }));
    await take(api.getHostedConfig('no-such-project'));
    await take(new PostgateClient({ apiKey: env.authKey, baseURL: 'http://127.0.0.1:1' }).getProviders());

    expect(Object.keys(seen).sort()).toEqual([
      'CODE_EXPIRED',
      'INVALID_API_KEY',
      'INVALID_CODE',
      'INVALID_CREDENTIAL',
      'INVALID_REQUEST',
      'NETWORK_ERROR',
      'NOT_FOUND',
      'PROVIDER_NOT_ENABLED',
      'RATE_LIMIT_EXCEEDED',
      'REDIRECT_NOT_ALLOWED',
      'REGION_NOT_ALLOWED',
      'SESSION_INVALID',
      'TOO_MANY_ATTEMPTS',
    ]);
    for (const e of Object.values(seen)) {
      expect(e.message.length).toBeGreaterThan(0);
      expect(e.status).toBe(e.code === 'NETWORK_ERROR' ? 0 : statusOf[e.code as ErrorCode]);
    }
  });

  it('builds as a package of its own, with declarations for User and Session', async () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-sdk-'));
    const root = path.resolve(import.meta.dirname, '../../..');
    await promisify(execFile)(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'auth/sdk'), '--outDir', out]);
    const types = fs.readFileSync(path.join(out, 'types.d.ts'), 'utf8');
    expect(types).toMatch(/export interface Session \{[^}]*ip\?: string;[^}]*userAgent\?: string;/s);
    expect(types).toContain('export interface User {');
    expect(fs.readFileSync(path.join(out, 'index.d.ts'), 'utf8')).toContain('usePostgate');
    expect(fs.existsSync(path.join(out, 'react.js'))).toBe(true);
  });
});
