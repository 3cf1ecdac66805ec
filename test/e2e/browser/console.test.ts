// The operator console in a real browser (Debian's chromium through playwright-core), used as an
// operator would: the sign-in form, the pages found by their headings, labels and buttons. One stack
// for the file (console-harness.ts): loopback DNS and MX, a webhook receiver, three projects with a
// few hundred emails. What the console shows is checked against what happened at the MX and what the
// public API answers; its safety (session cookie, CSRF, CSP, nothing loaded from elsewhere, the token
// kept out of the page) is checked from the browser's side. Screenshots of every page go to
// test-results/console/ (docs/console/ with POSTGATE_SCREENSHOTS=1).
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Cookie, Page } from 'playwright-core';
import { allStarted, launch } from './harness.js';
import { GMAIL_RATE_LIMITED, shot, startConsoleEnv, type ConsoleEnv } from './console-harness.js';
import { messageIdOf } from '../../helpers/mx-sink.js';

let env: ConsoleEnv;
let browser: Browser;
let context: BrowserContext;
let page: Page;
/** Every URL the console's page asked for, and every console error and uncaught error it had. */
const requested: string[] = [];
const errors: string[] = [];

beforeAll(async () => {
  await allStarted([startConsoleEnv().then((e) => (env = e)), launch().then((b) => (browser = b))]);
  context = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: 'en-US', timezoneId: 'UTC' });
  page = await context.newPage();
  page.on('request', (r) => requested.push(r.url()));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await env?.close();
});

const tag = () => crypto.randomBytes(3).toString('hex');
const received = (id: string) => env.sink.messages.filter((m) => messageIdOf(m) === id || m.emailId === id);

async function send(to: string, subject = `Order confirmation ${tag()}`): Promise<string> {
  const p = env.projects.acme;
  const r = await env.stack.api('POST', '/v1/emails', p.keys.live, { from: 'hello@acme.test', to, subject, text: 'Thanks for your order.' });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return r.body.id;
}

/** Goes to a page of the console through its navigation, as a person would, and waits for its heading. */
async function open(name: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name, exact: true }).click();
  await expect.poll(() => page.getByRole('heading', { level: 1, name }).isVisible()).toBe(true);
}

/** Finds an email on the Emails page by its recipient and opens it. */
async function openEmail(to: string, subject: string): Promise<void> {
  await open('Emails');
  await page.getByLabel('Recipient').fill(to);
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  await page.getByRole('table', { name: 'Emails found' }).getByRole('link', { name: subject }).click();
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toContain(subject);
}

const cookieOf = async (): Promise<Cookie | undefined> => (await context.cookies()).find((c) => c.name === 'postgate_console');

describe('the operator console', () => {
  it('signs in with the admin token through the form; the token stays out of the page and its storage', async () => {
    const res = await page.goto(env.consoleUrl);
    // The strict policy the page runs under (no inline script, nothing from elsewhere, no framing).
    expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");
    expect(res?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
    const field = page.getByLabel('Admin token');
    await field.waitFor();
    await shot(page, 'sign-in-form');
    // A wrong token is refused on the form.
    await field.fill('pg_admin_wrong');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/token|sign/i);
    await field.fill(env.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1, name: 'Overview' }).isVisible()).toBe(true);

    const cookie = await cookieOf();
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    expect(cookie!.expires).toBe(-1); // a browser-session cookie: the server keeps the lifetimes
    const kept = await page.evaluate(() => ({
      storage: JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }),
      html: document.documentElement.outerHTML,
      inputs: [...document.querySelectorAll('input, textarea')].map((i) => (i as HTMLInputElement).value).join('\n'),
    }));
    expect(kept.storage).not.toContain(env.token);
    expect(kept.html).not.toContain(env.token);
    expect(kept.inputs).not.toContain(env.token);
    // A reload keeps the session (the CSRF token comes back from GET /console/api/session).
    await page.reload();
    await expect.poll(() => page.getByRole('heading', { level: 1, name: 'Overview' }).isVisible()).toBe(true);
  });

  it('finds an email sent through the API by its recipient, with its timeline and the MX answer', async () => {
    const to = `find-${tag()}@inbox.test`;
    const subject = `Your receipt #${tag()}`;
    const id = await send(to, subject);
    const done = await env.stack.waitEmail(env.projects.acme.keys.live, id, (e) => e.status === 'sent');
    // The MX's answer to the message: a 'sent' event (postgate's word for accepted by the receiving MX).
    const answer = done.events.find((e: any) => e.type === 'sent')?.response as string;
    expect(answer).toContain('message queued');
    await openEmail(to, subject);
    const timeline = page.getByRole('list', { name: 'Events' });
    await expect.poll(() => timeline.textContent()).toContain('sent');
    expect(await timeline.textContent()).toContain(`250 ${answer}`);
    expect(await timeline.textContent()).toContain('mx.inbox.test');
    expect(await page.getByRole('main').textContent()).toContain(to);
    await shot(page, 'email');
    await open('Emails');
    await shot(page, 'emails');
  });

  it("shows Google shaped on the Providers page and the Overview once the MX answers Gmail's 421 4.7.28", async () => {
    const to = `throttle-${tag()}@gmail.com`;
    env.sink.setBehaviour(to, { rcpt: [GMAIL_RATE_LIMITED] });
    await send(to);
    await open('Providers');
    const google = page.getByRole('article', { name: 'google' });
    await expect.poll(() => google.textContent(), { timeout: 20_000 }).toMatch(/shaped/i);
    expect(await google.textContent()).toContain('google-unsolicited-rate');
    expect(await google.textContent()).toContain('4.7.28');
    await shot(page, 'providers');
    await open('Overview');
    await expect.poll(() => page.getByRole('region', { name: 'Providers suspended or shaped' }).textContent(), { timeout: 15_000 }).toMatch(/google/i);
    await shot(page, 'overview');
  });

  it('suspends a provider from the Providers page: mail waits (deferred: suspended); resumed, it leaves', async () => {
    await open('Providers');
    const yahoo = page.getByRole('article', { name: 'yahoo' });
    await yahoo.getByLabel('Reason').fill('incident at Yahoo');
    await yahoo.getByRole('button', { name: 'Suspend yahoo' }).click();
    await yahoo.getByRole('button', { name: 'Confirm suspend yahoo' }).click();
    await expect.poll(() => yahoo.textContent()).toContain('incident at Yahoo');
    expect(await yahoo.textContent()).toMatch(/suspended/);
    const to = `held-${tag()}@yahoo.com`;
    const subject = `Held while suspended ${tag()}`;
    const id = await send(to, subject);
    await env.stack.waitEmail(env.projects.acme.keys.live, id, (e) => e.events.some((x: any) => x.type === 'deferred' && x.cause === 'suspended'));
    await openEmail(to, subject);
    await expect.poll(() => page.getByRole('list', { name: 'Events' }).textContent()).toMatch(/deferred[\s\S]*cause: suspended/i);
    expect(received(id)).toHaveLength(0);

    await open('Providers');
    await yahoo.getByRole('button', { name: 'Resume yahoo' }).click();
    await env.stack.waitEmail(env.projects.acme.keys.live, id, (e) => e.status === 'sent');
    expect(received(id)).toHaveLength(1);
    await openEmail(to, subject);
    await expect.poll(() => page.getByRole('list', { name: 'Events' }).textContent()).toMatch(/sent[\s\S]*via mx\.yahoo\.com[\s\S]*250/);
  });

  it('creates a key on the Projects page (shown once) and revokes it: the public API refuses it', async () => {
    await open('Projects');
    await shot(page, 'projects');
    await page.getByRole('table', { name: 'Projects' }).getByRole('link', { name: 'Acme Shop' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toContain('Acme Shop');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByRole('status', { name: 'New key' });
    const key = ((await shown.getByTestId('new-key').textContent()) ?? '').trim();
    expect(key).toMatch(/^pg_live_/);
    expect((await env.stack.api('GET', '/v1/emails', key)).status).toBe(200);
    await shown.getByRole('button', { name: 'Dismiss' }).click();
    // Keys are listed by their start and end, as shown when made.
    const prefix = `${key.slice(0, 12)}…${key.slice(-4)}`;
    const row = page.getByRole('table', { name: 'API keys' }).getByRole('row').filter({ hasText: prefix });
    await row.getByRole('button', { name: `Revoke ${prefix}` }).click();
    await row.getByRole('button', { name: `Confirm revoke ${prefix}` }).click();
    await expect.poll(() => row.getByRole('button').count()).toBe(0);
    expect(await row.textContent()).not.toContain('active');
    await shot(page, 'project');
    expect((await env.stack.api('GET', '/v1/emails', key)).status).toBe(401);
    // What was done in the console is in the operator audit log, said to be done there.
    const audit = (await env.stack.admin('GET', '/admin/v1/audit')).data as Array<{ action: string; details: Record<string, unknown> }>;
    for (const action of ['queue.suspend', 'queue.resume', 'key.create', 'key.revoke'])
      expect(audit.find((a) => a.action === action)?.details, action).toMatchObject({ via: 'console' });
  });

  it('shows suppressions, webhooks and sign-in activity', async () => {
    await open('Suppressions');
    await expect.poll(() => page.getByRole('table', { name: 'Suppressed addresses' }).textContent()).toContain('old.account@yahoo.com');
    await shot(page, 'suppressions');
    await open('Webhooks');
    const endpoints = page.getByRole('table', { name: 'Webhook endpoints' });
    await expect.poll(() => endpoints.textContent()).toContain('/flaky/postgate');
    await shot(page, 'webhooks');
    await endpoints.getByRole('link', { name: /\/flaky\/postgate/ }).click();
    // The endpoint answered 500 to some: those were given up, failed, with the answer; the others delivered.
    const deliveries = page.getByRole('table', { name: 'Deliveries' });
    await expect.poll(() => deliveries.textContent()).toContain('HTTP 500');
    expect(await deliveries.textContent()).toContain('failed');
    expect(await deliveries.textContent()).toContain('delivered');
    await shot(page, 'webhook');
    await open('Sign-in');
    await page.getByRole('link', { name: 'Acme Shop' }).click();
    await expect.poll(() => page.getByRole('table', { name: 'Audit log' }).textContent()).toContain('session.created');
    await shot(page, 'sign-in');
  });

  it('refuses a change without the CSRF token (403 CSRF_TOKEN_INVALID), with the session cookie', async () => {
    const r = await page.request.post(`${env.origin}/admin/v1/queue/suspensions`, { data: { provider: 'google', reason: 'no csrf' } });
    expect(r.status()).toBe(403);
    expect((await r.json()).code).toBe('CSRF_TOKEN_INVALID');
    // Nothing was suspended.
    expect((await env.stack.admin('GET', '/admin/v1/queue/suspensions')).data).toEqual([]);
    // With the session's token in X-CSRF-Token the same change goes through (and is undone).
    const csrf = (await (await page.request.get(`${env.origin}/console/api/session`)).json()).csrf_token as string;
    const made = await page.request.post(`${env.origin}/admin/v1/queue/suspensions`, {
      data: { provider: 'google', reason: 'csrf ok' },
      headers: { 'x-csrf-token': csrf },
    });
    expect(made.status()).toBe(201);
    const undone = await page.request.delete(`${env.origin}/admin/v1/queue/suspensions/${(await made.json()).id}`, { headers: { 'x-csrf-token': csrf } });
    expect(undone.status()).toBeLessThan(300);
  });

  it('renders the overview on a phone-sized screen without horizontal overflow', async () => {
    await page.setViewportSize({ width: 375, height: 812 });
    await open('Overview');
    const widths = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
    expect(widths.scroll).toBeLessThanOrEqual(widths.client);
    await shot(page, 'overview-phone', 1700);
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('loaded nothing from another origin and broke no Content Security Policy rule', () => {
    const origin = new URL(env.origin).origin;
    expect(requested.length).toBeGreaterThan(0);
    expect(requested.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith('data:'))).toEqual([]);
    expect(errors.filter((e) => /Content Security Policy/i.test(e))).toEqual([]);
  });

  it('signs out: the old session cookie is refused by the API', async () => {
    const cookie = (await cookieOf())!;
    expect((await fetch(`${env.origin}/admin/v1/overview`, { headers: { cookie: `${cookie.name}=${cookie.value}` } })).status).toBe(200);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Admin token').waitFor();
    const r = await fetch(`${env.origin}/admin/v1/overview`, { headers: { cookie: `${cookie.name}=${cookie.value}` } });
    expect(r.status).toBe(401);
    expect(((await r.json()) as { code: string }).code).toBe('UNAUTHORIZED');
  });
});
