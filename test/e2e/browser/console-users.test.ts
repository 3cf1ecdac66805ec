// The console's Users page in a real browser (Debian's chromium through playwright-core), on the console
// stack (console-harness.ts). A user signs in through the auth API (an email code read back with the
// project's test key); the operator finds it by address, sees its session, bans it (its token is refused
// and a new sign-in answers USER_BANNED), unbans it, ends a session (its token is refused), and deletes it
// (gone from the list and from the API). A name and metadata with markup in them are shown as text, never
// run. The page fits a phone-sized screen. Its screenshot goes to test-results/console/ (docs/console/
// with POSTGATE_SCREENSHOTS=1).
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { allStarted, launch } from './harness.js';
import { shot, startConsoleEnv, type ConsoleEnv } from './console-harness.js';

let env: ConsoleEnv;
let browser: Browser;
let page: Page;
const errors: string[] = [];

beforeAll(async () => {
  await allStarted([startConsoleEnv().then((e) => (env = e)), launch().then((b) => (browser = b))]);
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: 'en-US', timezoneId: 'UTC' });
  page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(env.consoleUrl);
  await page.getByLabel('Admin token').fill(env.token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await env?.close();
});

const email = `jane.${crypto.randomBytes(3).toString('hex')}@customer.test`;
let ipSeq = 40;
let userId = '';
/** The tokens of the first sign-in and of the sign-in after the ban was lifted. */
let firstToken = '';
let afterUnban = '';

/** The auth API with acme's test key, as the project's app would call it. */
async function auth(method: 'GET' | 'POST', p: string, body?: unknown, headers: Record<string, string> = {}) {
  const h = { 'x-service-key': env.projects.acme.keys.test, 'x-service-client-ip': '203.0.113.77', 'user-agent': 'console-users-e2e/1', ...headers };
  return env.stack.api(method, `/api/v1/auth${p}`, undefined, body, h);
}
/** An email-code sign-in in the test environment (the code is read back, never sent); the verify answer. */
async function codeSignIn(to = email) {
  const ip = `203.0.113.${ipSeq++}`;
  const sent = await auth('POST', '/sign-in/email-otp/send', { email: to }, { 'x-service-client-ip': ip });
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  const code = (await auth('GET', `/test/code?email=${encodeURIComponent(to)}`)).body.code as string;
  return auth('POST', '/sign-in/email-otp/verify', { email: to, code }, { 'x-service-client-ip': ip });
}
const sessionOf = (token: string) => auth('GET', '/session', undefined, { authorization: `Bearer ${token}` });

const main = () => page.getByRole('main');
const sessions = () => page.getByRole('table', { name: 'Live sessions' });

/** The Users page of acme's test environment, searched by the start of an address. */
async function search(prefix: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Users', exact: true }).click();
  await expect.poll(() => page.getByRole('heading', { level: 1, name: 'Users' }).isVisible()).toBe(true);
  await page.getByRole('table', { name: 'Projects' }).getByRole('link', { name: 'Acme Shop' }).click();
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Users: Acme Shop');
  await page.getByLabel('Environment').selectOption('test');
  await expect.poll(() => page.url()).toContain('env=test');
  await page.getByLabel('Email', { exact: true }).fill(prefix);
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  await expect.poll(() => page.url()).toContain(`email_prefix=${encodeURIComponent(prefix)}`);
}

describe('the Users page', () => {
  it('finds a user signed in through the auth API by its address, with its identity and live session', async () => {
    const first = await codeSignIn();
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    userId = first.body.user.id;
    firstToken = first.body.token;
    await search(email.slice(0, 10));
    const found = page.getByRole('table', { name: 'Users found' });
    await expect.poll(() => found.textContent()).toContain(email);
    expect(await found.getByRole('row').count()).toBe(2); // the head and the one user
    expect(await found.textContent()).toContain('email');
    await found.getByRole('link', { name: email }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe(email);
    await expect.poll(() => sessions().textContent()).toContain('console-users-e2e/1');
    expect(await sessions().getByRole('row').count()).toBe(2);
    expect(await page.getByRole('table', { name: 'Identities' }).textContent()).toContain('email');
    expect(await page.getByRole('table', { name: 'Passkeys' }).textContent()).toContain('No passkeys.');
    expect(await page.getByRole('region', { name: 'Two-factor' }).textContent()).toContain('No second factor.');
    await shot(page, 'users', 1500);
  });

  it('bans it with a reason: its token is refused (SESSION_INVALID) and a new sign-in answers USER_BANNED; unbanned, it signs in', async () => {
    // (An address gets at most five codes an hour: the tests sign in four times.)
    const token = firstToken;
    expect((await sessionOf(token)).status).toBe(200);
    const form = page.getByRole('form', { name: 'Ban this user' });
    await form.getByLabel('Reason').fill('chargebacks');
    await form.getByRole('button', { name: 'Ban user' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toBe('Banned.');
    await expect.poll(() => page.getByRole('definition').filter({ hasText: 'chargebacks' }).count()).toBe(1);
    expect(await sessions().textContent()).toContain('No live sessions.');

    const refused = await sessionOf(token);
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('SESSION_INVALID');
    const again = await codeSignIn();
    expect(again.status).toBe(403);
    expect(again.body.code).toBe('USER_BANNED');

    // The list shows the ban.
    await page.getByRole('link', { name: 'acme', exact: true }).click();
    const found = page.getByRole('table', { name: 'Users found' });
    await expect.poll(() => found.getByRole('row').filter({ hasText: email }).textContent()).toContain('banned');
    await found.getByRole('link', { name: email }).click();
    await page.getByRole('button', { name: 'Unban user' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toBe('Ban lifted.');
    // The page reads the user again after the change: the ban form comes back once that answer is in.
    await expect.poll(() => page.getByRole('form', { name: 'Ban this user' }).isVisible()).toBe(true);
    const after = await codeSignIn();
    expect(after.status).toBe(200);
    afterUnban = after.body.token;
    expect((await sessionOf(afterUnban)).status).toBe(200);
  });

  it('ends one session: its token is refused at once, the other one still works', async () => {
    const a = afterUnban;
    const b = (await codeSignIn()).body.token as string;
    // The page refreshes every 5 s: the session from after the ban was lifted and the new one.
    await expect.poll(() => sessions().getByRole('row').count(), { timeout: 10_000 }).toBe(3);
    const live = await env.stack.admin('GET', `/admin/v1/projects/acme/auth/users/${userId}/sessions?env=test`);
    const newest = (live.data as Array<{ id: string }>)[0]!.id;
    const label = `End session ${newest.slice(0, 8)}`;
    await sessions().getByRole('button', { name: label }).click();
    await sessions()
      .getByRole('button', { name: `Confirm ${label.charAt(0).toLowerCase()}${label.slice(1)}` })
      .click();
    await expect.poll(() => page.getByRole('status').textContent()).toBe('Session ended.');
    await expect.poll(() => sessions().getByRole('row').count()).toBe(2);
    const refused = await sessionOf(b);
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('SESSION_INVALID');
    expect((await sessionOf(a)).status).toBe(200);
    // End every session.
    await page.getByRole('button', { name: 'End every session' }).click();
    await page.getByRole('button', { name: 'Confirm end every session' }).click();
    await expect.poll(() => sessions().textContent()).toContain('No live sessions.');
    expect((await sessionOf(a)).status).toBe(401);
  });

  it('shows a name and metadata with markup in them as text, never run', async () => {
    const hostile = '<img src=x onerror="document.title=\'pwned\'">';
    const r = await env.stack.admin('PATCH', `/admin/v1/projects/acme/auth/users/${userId}?env=test`, {
      name: `jane${hostile}@customer.test`,
      metadata: { note: hostile, plan: 'pro' },
    });
    expect(r.name).toContain('<img');
    await expect
      .poll(
        () =>
          page
            .getByRole('definition')
            .filter({ hasText: `jane${hostile}@customer.test` })
            .count(),
        { timeout: 10_000 },
      )
      .toBe(1);
    expect(await page.getByRole('region', { name: 'Metadata' }).textContent()).toContain(JSON.stringify(hostile).slice(1, -1));
    expect(await main().locator('img').count()).toBe(0);
    expect(await page.title()).not.toBe('pwned');
  });

  it('fits a phone-sized screen', async () => {
    await page.setViewportSize({ width: 375, height: 812 });
    await page.reload();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe(email);
    const widths = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
    expect(widths.scroll).toBeLessThanOrEqual(widths.client);
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('deletes the user after a confirmation naming its address: gone from the list and the API', async () => {
    await page.getByRole('button', { name: `Delete ${email}` }).click();
    await page.getByRole('button', { name: `Confirm delete ${email}` }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Users: Acme Shop');
    await search(email);
    await expect.poll(() => page.getByRole('table', { name: 'Users found' }).textContent()).toContain('No user matches.');
    const gone = await env.stack.adminApi('GET', `/admin/v1/projects/acme/auth/users/${userId}?env=test`, env.token);
    expect(gone.status).toBe(404);
    expect(errors.filter((e) => /Content Security Policy/i.test(e))).toEqual([]);
  });
});
