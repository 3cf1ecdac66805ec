// Magic links over HTTP, on the real stack: the link really travels (loopback MX), opening it (GET,
// HEAD) spends nothing, the confirm POST spends it once and lands on the app's callback with an
// svc_code that only the asking browser's verifier exchanges (a forwarded link signs no one in),
// reuse and expiry refused with a page, only allowed callbacks, the email codes' limits and
// no-enumeration answers, and escaped pages.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Project, Stack } from '../../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { replies, startMxSink, type MxSink, type ReceivedMessage } from '../../helpers/mx-sink.js';
import { allowOrigin, APP, authStack, client, logLines, provider, setClock, viaLoopback } from './setup.js';

let stack: Stack;
let mx: MxSink;
let dns: DnsServer;
let p: Project;
let ipSeq = 0;
const freshIp = () => `198.51.100.${++ipSeq}`;
const NAME = 'Acme <script>alert(1)</script> & "Co"';

const verifier = () => crypto.randomBytes(32).toString('base64url');
const challengeOf = (v: string) => crypto.createHash('sha256').update(v).digest('base64url');
const LINK = /https?:\/\/[^\s"<>]+\/api\/v1\/auth\/magic-link\/[A-Za-z0-9_-]{43}/;

beforeAll(async () => {
  [mx, dns] = await Promise.all([
    startMxSink(),
    startDnsServer([
      { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test' },
      { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
    ]),
  ]);
  stack = await authStack({ POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(mx.port) });
  p = await stack.createProject('ml', NAME);
  await allowOrigin(stack, p);
  await provider(stack, p, 'email', { methods: ['otp', 'magic_link'] });
}, 90_000);
afterAll(async () => {
  await stack?.stop();
  await mx?.close();
  await dns?.close();
});

const live = () => client(stack, p.keys.live, { 'x-service-client-ip': freshIp() });
const testKey = () => client(stack, p.keys.test, { 'x-service-client-ip': freshIp() });

/** The link as the person's browser opens it (postgate's base URL names localhost). */
const open = (url: string, method = 'GET', headers: Record<string, string> = {}) =>
  fetch(viaLoopback(url), {
    method,
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    ...(method === 'POST' ? { body: '' } : {}),
  });

async function mailTo(address: string): Promise<ReceivedMessage> {
  for (let i = 0; i < 200; i++) {
    const m = mx.messages.find((x) => x.rcptTo.includes(address));
    if (m) return m;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no email reached ${address}`);
}

/** A test-environment link (never sent), read through the test-only route. */
async function testLink(email: string, codeChallenge: string, callbackURL = `${APP}/cb`): Promise<string> {
  const api = testKey();
  const sent = await api.post('/sign-in/magic-link/send', { email, callbackURL, codeChallenge });
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  const r = await api.get(`/test/magic-link?email=${encodeURIComponent(email)}`);
  expect(r.status).toBe(200);
  return r.body.url as string;
}

const svcCodeOf = (location: string | null) => new URL(location!).searchParams.get('svc_code')!;

describe('enabling', () => {
  it('is off by default (email codes on, links not) and turned on with provider set --methods otp,magic_link', async () => {
    const q = await stack.createProject('ml-default');
    await allowOrigin(stack, q);
    const api = client(stack, q.keys.live, { 'x-service-client-ip': freshIp() });
    expect((await api.get('/providers')).body.providers).toEqual([{ id: 'email', name: 'Email', methods: ['otp'] }]);
    const off = await api.post('/sign-in/magic-link/send', { email: 'a@inbox.test', callbackURL: `${APP}/cb`, codeChallenge: challengeOf(verifier()) });
    expect([off.status, off.body.code]).toEqual([400, 'PROVIDER_NOT_ENABLED']);
    await stack.cli('provider', 'set', '--project', q.slug, '--provider', 'email', '--methods', 'otp,magic_link');
    expect((await api.get('/providers')).body.providers).toEqual([{ id: 'email', name: 'Email', methods: ['otp', 'magic_link'] }]);
    const test = client(stack, q.keys.test, { 'x-service-client-ip': freshIp() });
    const on = await test.post('/sign-in/magic-link/send', { email: 'a@inbox.test', callbackURL: `${APP}/cb`, codeChallenge: challengeOf(verifier()) });
    expect(on.status).toBe(200);
  });
});

describe('a live link', () => {
  it('arrives by email; GET and HEAD spend nothing; the POST lands on the callback with an svc_code the asking browser exchanges; reuse is refused', async () => {
    const v = verifier();
    const api = live();
    const sent = await api.post('/sign-in/magic-link/send', { email: 'Ann@Inbox.test', callbackURL: `${APP}/cb?next=%2Fhome`, codeChallenge: challengeOf(v) });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body).toEqual({ success: true, message: expect.any(String) });

    const mail = await simpleParser((await mailTo('ann@inbox.test')).raw);
    expect(mail.subject).toBe(`Sign in to ${NAME}`);
    const url = LINK.exec(mail.text ?? '')![0];
    expect(url).not.toMatch(/ann|inbox|%40|\?/i);
    expect(mail.html).toContain(url);
    expect(mail.html).not.toContain('<script>');
    const token = url.split('/').at(-1)!;

    for (const method of ['GET', 'HEAD', 'GET']) {
      const page = await open(url, method);
      expect(page.status).toBe(200);
      expect(page.headers.get('location')).toBeNull();
      // The form posts here, and the redirect that follows may go to the link's callback origin only.
      expect(page.headers.get('content-security-policy')).toMatch(new RegExp(`default-src 'none'.*form-action 'self' ${APP};.*frame-ancestors 'none'`));
      expect(page.headers.get('cache-control')).toBe('no-store');
      expect(page.headers.get('referrer-policy')).toBe('no-referrer');
      const html = await page.text();
      if (method === 'HEAD') continue;
      expect(html).toContain('<form method="post">');
      expect(html).not.toContain('<script');
      expect(html).toContain('Acme &#60;script&#62;alert(1)&#60;/script&#62; &#38; &#34;Co&#34;');
      expect(html).toContain('ann@inbox.test');
    }

    const confirmed = await open(url, 'POST', { 'user-agent': 'MagicTest/1.0' });
    expect(confirmed.status).toBe(303);
    const back = new URL(confirmed.headers.get('location')!);
    expect(`${back.origin}${back.pathname}`).toBe(`${APP}/cb`);
    expect(back.searchParams.get('next')).toBe('/home');
    const code = svcCodeOf(confirmed.headers.get('location'));

    const ex = await api.post('/exchange-code', { code, codeVerifier: v });
    expect(ex.status, JSON.stringify(ex.body)).toBe(200);
    const s = await api.session(ex.body.token);
    expect(s.body.user).toMatchObject({ email: 'ann@inbox.test', emailVerified: true, provider: 'email' });

    // Spent: a second confirm (another node, a replay) gets a page, not a redirect; so does the page itself.
    const again = await open(url, 'POST');
    expect(again.status).toBe(410);
    expect(again.headers.get('location')).toBeNull();
    expect(await again.text()).toContain('already used');
    expect((await open(url)).status).toBe(410);
    // The replay is in the audit log as a failed sign-in of that address (masked).
    const failed = (await stack.admin('GET', `/admin/v1/projects/${p.slug}/audit?type=sign_in.failed`)) as { data: Array<Record<string, unknown>> };
    expect(failed.data).toContainEqual(expect.objectContaining({ env: 'live', email: 'a***@inbox.test', provider: 'email', reason: 'invalid_code' }));

    // The token is never logged (the path is not a query, and nothing prints it).
    const log = fs.readFileSync(stack.logFile, 'utf8');
    expect(log).not.toContain(token);
    expect(await logLines(stack, (l) => l.includes('sign-in link email queued'))).not.toEqual([]);
  });

  it('records magic_link.sent without a user id or a whole address (the same entry for any address)', async () => {
    const log = (await stack.admin('GET', `/admin/v1/projects/${p.slug}/audit?type=magic_link.sent`)) as { data: Array<Record<string, unknown>> };
    const mine = log.data.filter((e) => e.env === 'live');
    expect(mine.length).toBeGreaterThan(0);
    for (const e of mine) {
      expect(e).toMatchObject({ type: 'magic_link.sent', user_id: null, email: null, provider: 'email' });
      expect(JSON.stringify(e)).not.toContain('ann@');
    }
  });
});

describe('the browser binding (a forwarded link)', () => {
  it("gives whoever opens it a code only the asking browser's verifier exchanges", async () => {
    const v = verifier();
    const url = await testLink('fwd@example.com', challengeOf(v));
    const r = await open(url, 'POST');
    expect(r.status).toBe(303);
    const code = svcCodeOf(r.headers.get('location'));
    const api = testKey();
    const none = await api.post('/exchange-code', { code });
    expect([none.status, none.body.code]).toEqual([400, 'INVALID_CODE']);
    const other = await api.post('/exchange-code', { code, codeVerifier: verifier() });
    expect([other.status, other.body.code]).toEqual([400, 'INVALID_CODE']);
    // Not used up by the refusals: the asking browser still finishes its sign-in.
    expect((await api.post('/exchange-code', { code, codeVerifier: v })).status).toBe(200);
  });

  it('requires codeChallenge while the project requires the binding', async () => {
    const r = await testKey().post('/sign-in/magic-link/send', { email: 'nochal@example.com', callbackURL: `${APP}/cb` });
    expect([r.status, r.body.code]).toEqual([400, 'INVALID_REQUEST']);
  });
});

describe('refusals', () => {
  it('expires after 10 minutes, with a page and no redirect', async () => {
    const url = await testLink('late@example.com', challengeOf(verifier()));
    try {
      await setClock(stack, 10 * 60_000 + 1000);
      const page = await open(url);
      expect(page.status).toBe(410);
      expect(await page.text()).toContain('expired');
      const post = await open(url, 'POST');
      expect([post.status, post.headers.get('location')]).toEqual([410, null]);
    } finally {
      await setClock(stack, 0);
    }
  });

  it('answers an unknown or malformed link with a page (in Russian for a Russian browser)', async () => {
    const base = `${stack.url}/api/v1/auth/magic-link/`;
    const cases: Array<[string, number]> = [
      [crypto.randomBytes(32).toString('base64url'), 404],
      ['short', 400],
      ['x'.repeat(43).replace(/x$/, '!'), 400],
    ];
    for (const [t, status] of cases) {
      for (const method of ['GET', 'POST']) {
        const r = await open(base + encodeURIComponent(t), method);
        expect(r.status, t).toBe(status);
        expect(r.headers.get('content-type')).toMatch(/text\/html/);
        expect(r.headers.get('location')).toBeNull();
      }
    }
    const ru = await open(`${base}${crypto.randomBytes(32).toString('base64url')}`, 'GET', { 'accept-language': 'ru-RU,ru;q=0.9,en;q=0.5' });
    const html = await ru.text();
    expect(html).toContain('lang="ru"');
    expect(html).toContain('Ссылка недействительна');
  });

  it('returns only to an allowed callback', async () => {
    const api = testKey();
    const c = challengeOf(verifier());
    for (const callbackURL of ['https://evil.example/cb', 'javascript:alert(1)', '/relative', 'https://user:pw@app.example.com/cb']) {
      const r = await api.post('/sign-in/magic-link/send', { email: 'cb@example.com', callbackURL, codeChallenge: c });
      expect([r.status, r.body.code], callbackURL).toEqual([400, 'REDIRECT_NOT_ALLOWED']);
    }
    expect((await api.get('/test/magic-link?email=cb@example.com')).status).toBe(404);
  });

  it('lets only test keys read test links', async () => {
    const r = await live().get('/test/magic-link?email=fwd@example.com');
    expect([r.status, r.body.code]).toEqual([401, 'INVALID_API_KEY']);
  });

  it('shows a hostile address escaped on the confirm page', async () => {
    const email = "o'hara&<b>@example.com";
    const bad = await testKey().post('/sign-in/magic-link/send', { email, callbackURL: `${APP}/cb`, codeChallenge: challengeOf(verifier()) });
    expect(bad.body.code).toBe('INVALID_REQUEST');
    const odd = "o'hara&co@example.com";
    const url = await testLink(odd, challengeOf(verifier()));
    const html = await (await open(url)).text();
    expect(html).toContain('o&#39;hara&#38;co@example.com');
    expect(html).not.toContain("o'hara&co");
  });
});

describe('no enumeration, and the email codes’ limits', () => {
  it('answers the same for an account, no account and a suppressed address; the suppressed one gets no mail', async () => {
    mx.setBehaviour('gone@inbox.test', { rcpt: [replies.noSuchUser] });
    await stack.verifyDomain(p.slug, 'ml.test');
    const bounced = await stack.api('POST', '/v1/emails', p.keys.live, { from: 'a@ml.test', to: 'gone@inbox.test', subject: 's', text: 't' });
    await stack.waitEmail(p.keys.live, bounced.body.id, (e) => e.status === 'bounced');
    const before = mx.messages.length;

    // Past the cooldown of the link ann@ got above.
    await setClock(stack, 61_000);
    try {
      const c = challengeOf(verifier());
      const send = (email: string) => live().post('/sign-in/magic-link/send', { email, callbackURL: `${APP}/cb`, codeChallenge: c });
      // ann@inbox.test has an account (the live test above); nobody@ has none; gone@ is suppressed.
      const [known, unknown, suppressed] = [await send('ann@inbox.test'), await send('nobody@inbox.test'), await send('gone@inbox.test')];
      expect(known.status).toBe(200);
      expect([unknown.status, unknown.body]).toEqual([known.status, known.body]);
      expect([suppressed.status, suppressed.body]).toEqual([known.status, known.body]);
      await mailTo('nobody@inbox.test');
      expect(await logLines(stack, (l) => l.includes('sign-in link not emailed: the address is suppressed'))).toHaveLength(1);
      expect(mx.messages.slice(before).filter((m) => m.rcptTo.includes('gone@inbox.test'))).toEqual([]);
    } finally {
      await setClock(stack, 0);
    }
  });

  it('has a resend cooldown, and shares the per-address budget with email codes', async () => {
    const api = testKey();
    const email = 'budget@example.com';
    const c = challengeOf(verifier());
    const link = () => api.post('/sign-in/magic-link/send', { email, callbackURL: `${APP}/cb`, codeChallenge: c });
    const code = () => api.post('/sign-in/email-otp/send', { email });
    try {
      expect((await link()).status).toBe(200);
      const soon = await link();
      expect([soon.status, soon.body.code]).toEqual([429, 'RATE_LIMIT_EXCEEDED']);
      expect(Number(soon.headers.get('retry-after'))).toBeGreaterThan(0);
      // Codes have their own cooldown but the same hourly budget of 5 emails per address.
      expect((await code()).status).toBe(200);
      await setClock(stack, 61_000);
      expect((await link()).status).toBe(200);
      expect((await code()).status).toBe(200);
      await setClock(stack, 122_000);
      expect((await code()).status).toBe(200);
      const over = await link();
      expect([over.status, over.body.code]).toEqual([429, 'RATE_LIMIT_EXCEEDED']);
      expect(over.body.error).toMatch(/this address/);
    } finally {
      await setClock(stack, 0);
    }
  });
});

describe('the hosted widget', () => {
  it('sends a link from an allowed page only, and offers it in its config', async () => {
    const body = { slug: p.slug, email: 'widget@example.com', redirectUri: `${APP}/cb`, codeChallenge: challengeOf(verifier()) };
    const noOrigin = await stack.api('POST', '/api/v1/auth/hosted/magic-link/send', undefined, body);
    expect([noOrigin.status, noOrigin.body.code]).toEqual([400, 'REDIRECT_NOT_ALLOWED']);
    const evil = await stack.api('POST', '/api/v1/auth/hosted/magic-link/send', undefined, body, { origin: 'https://evil.example' });
    expect(evil.body.code).toBe('REDIRECT_NOT_ALLOWED');
    const ok = await stack.api('POST', '/api/v1/auth/hosted/magic-link/send', undefined, body, { origin: APP });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toEqual({ success: true, message: expect.any(String), resendAfterSeconds: 60 });
    const cfg = await stack.api('GET', `/api/v1/auth/hosted-config/${p.slug}`, undefined);
    expect(cfg.body.providers).toContainEqual(expect.objectContaining({ id: 'email', methods: ['otp', 'magic_link'] }));
  });
});
