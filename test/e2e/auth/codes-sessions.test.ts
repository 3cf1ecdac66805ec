// Email and SMS sign-in codes: delivery (live: through the mail pipeline or the
// SMS gateway; test: never sent, readable by test keys), expiry, brute force,
// atomic consumption, resend cooldown, limits, and no account enumeration.
// Sessions: lookup, immediate sign-out, per-project expiry, and isolation
// between projects and between a project's live and test environments.
import fs from 'node:fs';
import { openStore } from '../../../control/store/open.js';
import { localInvalidator } from '../../../core/invalidation.js';
import { simpleParser } from 'mailparser';
import { startMxSink, type MxSink } from '../../helpers/mx-sink.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack, Project } from '../../helpers/stack.js';
import { authStack, client, logLines, provider, setClock, signedWidget, TEST_BOT, unixNow } from './setup.js';
import { startSmsGateway, type SmsGateway } from './peers.js';

let stack: Stack;
let sms: SmsGateway;
let ipSeq = 0;
/** Each test calls from its own client IP, so per-IP limits of one test do not reach another. */
const freshIp = () => `203.0.113.${++ipSeq}`;

let mx: MxSink;
let dns: DnsServer;

beforeAll(async () => {
  // Code emails really travel: DNS on loopback names a loopback MX for inbox.test.
  [mx, dns, sms] = await Promise.all([
    startMxSink(),
    startDnsServer([
      { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test' },
      { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
    ]),
    startSmsGateway(),
  ]);
  stack = await authStack({ POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(mx.port) });
});
afterAll(async () => {
  await sms?.close();
  await stack?.stop();
  await mx?.close();
  await dns?.close();
});

async function testApi(slug: string) {
  const p = await stack.createProject(slug);
  return { p, api: client(stack, p.keys.test, { 'x-service-client-ip': freshIp() }) };
}

const codeOf = async (api: ReturnType<typeof client>, email: string) => (await api.get(`/test/code?email=${encodeURIComponent(email)}`)).body.code as string;

describe('email codes, test environment', () => {
  it('sends nothing, exposes the code to the test key, and signs in with it', async () => {
    const { api } = await testApi('codes-test');
    const sent = await api.post('/sign-in/email-otp/send', { email: 'Jane@Example.com' });
    expect(sent.status).toBe(200);
    expect(sent.body).toEqual({ success: true, message: expect.any(String) });
    const code = await codeOf(api, 'jane@example.com');
    expect(code).toMatch(/^\d{6}$/);
    const v = await api.post('/sign-in/email-otp/verify', { email: 'jane@example.com', code });
    expect(v.status).toBe(200);
    expect(v.body).toEqual({ token: expect.stringMatching(/^pgs_/), user: { id: expect.any(String), email: 'jane@example.com' } });
    // Consumed: the same code does not work twice.
    expect((await api.post('/sign-in/email-otp/verify', { email: 'jane@example.com', code })).body.code).toBe('INVALID_CODE');
    expect((await api.get('/test/code?email=jane@example.com')).status).toBe(404);
  });

  it('answers the same whether or not the address has an account', async () => {
    const { api } = await testApi('codes-enum');
    await api.post('/sign-in/email-otp/send', { email: 'known@example.com' });
    await api.post('/sign-in/email-otp/verify', { email: 'known@example.com', code: await codeOf(api, 'known@example.com') });
    // The account's code was consumed, so this is a fresh send like the one to an unknown address.
    const known = await api.post('/sign-in/email-otp/send', { email: 'known@example.com' });
    const unknown = await api.post('/sign-in/email-otp/send', { email: 'nobody@example.com' });
    expect(known.status).toBe(200);
    expect(known.status).toBe(unknown.status);
    expect(known.body).toEqual(unknown.body);
    const wrongKnown = await api.post('/sign-in/email-otp/verify', { email: 'known@example.com', code: '000000' });
    const wrongUnknown = await api.post('/sign-in/email-otp/verify', { email: 'ghost@example.com', code: '000000' });
    expect(wrongKnown.status).toBe(wrongUnknown.status);
    expect(wrongKnown.body).toEqual(wrongUnknown.body);
  });

  it('allows at most 5 wrong tries per code, then not even the right code', async () => {
    const { api } = await testApi('codes-brute');
    await api.post('/sign-in/email-otp/send', { email: 'target@example.com' });
    const code = await codeOf(api, 'target@example.com');
    const wrong = code === '123456' ? '654321' : '123456';
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push((await api.post('/sign-in/email-otp/verify', { email: 'target@example.com', code: wrong })).body.code);
    expect(answers).toEqual(['INVALID_CODE', 'INVALID_CODE', 'INVALID_CODE', 'INVALID_CODE', 'TOO_MANY_ATTEMPTS']);
    const right = await api.post('/sign-in/email-otp/verify', { email: 'target@example.com', code });
    expect(right.status).toBe(429);
    expect(right.body.code).toBe('TOO_MANY_ATTEMPTS');
  });

  it('one of two racing verifications with the right code wins', async () => {
    const { api } = await testApi('codes-race');
    await api.post('/sign-in/email-otp/send', { email: 'race@example.com' });
    const code = await codeOf(api, 'race@example.com');
    const both = await Promise.all([1, 2, 3].map(() => api.post('/sign-in/email-otp/verify', { email: 'race@example.com', code })));
    expect(both.filter((r) => r.status === 200)).toHaveLength(1);
  });

  it('expires after 10 minutes', async () => {
    const { api } = await testApi('codes-expiry');
    await api.post('/sign-in/email-otp/send', { email: 'late@example.com' });
    const code = await codeOf(api, 'late@example.com');
    try {
      await setClock(stack, 10 * 60_000 + 1000);
      const r = await api.post('/sign-in/email-otp/verify', { email: 'late@example.com', code });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('CODE_EXPIRED');
    } finally {
      await setClock(stack, 0);
    }
  });

  it('has a resend cooldown; a resend replaces the code', async () => {
    const { api } = await testApi('codes-cooldown');
    await api.post('/sign-in/email-otp/send', { email: 'again@example.com' });
    const first = await codeOf(api, 'again@example.com');
    const soon = await api.post('/sign-in/email-otp/send', { email: 'again@example.com' });
    expect(soon.status).toBe(429);
    expect(soon.body.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(Number(soon.headers.get('retry-after'))).toBeGreaterThan(0);
    try {
      await setClock(stack, 61_000);
      expect((await api.post('/sign-in/email-otp/send', { email: 'again@example.com' })).status).toBe(200);
      const second = await codeOf(api, 'again@example.com');
      if (second !== first) expect((await api.post('/sign-in/email-otp/verify', { email: 'again@example.com', code: first })).body.code).toBe('INVALID_CODE');
      expect((await api.post('/sign-in/email-otp/verify', { email: 'again@example.com', code: second })).status).toBe(200);
    } finally {
      await setClock(stack, 0);
    }
  });

  it('limits codes per address (5 an hour) and per client IP', async () => {
    const { p, api } = await testApi('codes-limits');
    try {
      const answers = [];
      for (let i = 0; i < 6; i++) {
        await setClock(stack, i * 61_000);
        answers.push((await api.post('/sign-in/email-otp/send', { email: 'busy@example.com' })).status);
      }
      expect(answers).toEqual([200, 200, 200, 200, 200, 429]);
    } finally {
      await setClock(stack, 0);
    }
    const one = client(stack, p.keys.test, { 'x-service-client-ip': freshIp() });
    const statuses = [];
    for (let i = 0; i < 31; i++) statuses.push((await one.post('/sign-in/email-otp/send', { email: `u${i}@example.com` })).status);
    expect(statuses.slice(0, 30).every((s) => s === 200)).toBe(true);
    expect(statuses[30]).toBe(429);
    // Another client IP is not limited by the first one's sends.
    expect(
      (await client(stack, p.keys.test, { 'x-service-client-ip': freshIp() }).post('/sign-in/email-otp/send', { email: 'other@example.com' })).status,
    ).toBe(200);
  });

  it('refuses malformed input with {error, code}', async () => {
    const { api } = await testApi('codes-input');
    expect((await api.post('/sign-in/email-otp/send', { email: 'not-an-address' })).body).toMatchObject({ code: 'INVALID_REQUEST', error: expect.any(String) });
    expect((await api.post('/sign-in/email-otp/send', { email: 'a@b.co', extra: 1 })).body.code).toBe('INVALID_REQUEST');
    expect((await api.post('/sign-in/email-otp/verify', { email: 'a@b.co', code: 'abcdef' })).body.code).toBe('INVALID_CODE');
  });
});

describe('email codes, live environment', () => {
  it('sends the code as a transactional email through the pipeline; live keys cannot read codes', async () => {
    const p = await stack.createProject('codes-live');
    const api = client(stack, p.keys.live, { 'x-service-client-ip': freshIp() });
    expect((await api.post('/sign-in/email-otp/send', { email: 'live@inbox.test' })).status).toBe(200);
    const read = await api.get('/test/code?email=live@inbox.test');
    expect(read.status).toBe(401);
    expect(read.body.code).toBe('INVALID_API_KEY');

    // The email is the project's, like any other (its id is logged, never its code).
    const [line] = await logLines(stack, (l) => l.includes('sign-in code email queued') && l.includes('codes-live'));
    const emailId = JSON.parse(line!).emailId as string;
    const email = (await stack.api('GET', `/v1/emails/${emailId}`, p.keys.live)).body;
    expect(email).toMatchObject({ id: emailId, from: 'no-reply@postgate.test', to: ['live@inbox.test'], subject: expect.stringContaining('sign-in code') });
    // The code is caught where a user would read it: at the receiving mail server.
    const [got] = await mx.waitFor(1, 20_000);
    expect(got!.rcptTo).toEqual(['live@inbox.test']);
    const parsed = await simpleParser(got!.raw);
    const code = /\b(\d{6})\b/.exec(parsed.text ?? '')![1]!;
    await stack.waitEmail(p.keys.live, emailId, (e) => e.status === 'sent');
    // Once sent, the stored copy no longer holds the code: only its keyed hash remains.
    const stored = (await stack.api('GET', `/v1/emails/${emailId}`, p.keys.live)).body;
    expect(JSON.stringify(stored)).not.toContain(code);
    // Read through a second store on the same data dir (the running control keeps its own).
    const reader = await openStore({ dataDir: stack.dataDir, storage: { synchronous: 'NORMAL', maxBatch: 1 } }, localInvalidator());
    const request = (await reader.emails.get(p.id, emailId))!.email.request;
    await reader.close();
    expect(request).not.toContain(code);
    const v = await api.post('/sign-in/email-otp/verify', { email: 'live@inbox.test', code });
    expect(v.status).toBe(200);
    // No log line carries the code (numbers such as timestamps aside).
    const lines = fs
      .readFileSync(stack.logFile, 'utf8')
      .split('\n')
      .map((l) => l.replace(/"(time|pid|seq|lastSeq)":\d+/g, ''));
    expect(lines.filter((l) => l.includes(code))).toEqual([]);
  });
});

describe('SMS codes', () => {
  it('texts the code through the HTTP sender and signs in by phone (no email needed)', async () => {
    const p = await stack.createProject('codes-sms');
    await provider(stack, p, 'sms', { apiUrl: `${sms.url}/send`, clientSecret: 'sms-gw-token' });
    const api = client(stack, p.keys.live, { 'x-service-client-ip': freshIp() });
    const sent = await api.post('/sign-in/sms-otp/send', { phone: '+79991234567' });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const msg = sms.messages.at(-1)!;
    expect(msg).toMatchObject({ to: '+79991234567', auth: 'Bearer sms-gw-token' });
    const code = /\b(\d{6})\b/.exec(msg.text)![1]!;
    expect((await api.post('/sign-in/sms-otp/verify', { phone: '+79991234567', code: '000000' })).body.code).toBe(
      code === '000000' ? undefined : 'INVALID_CODE',
    );
    const v = await api.post('/sign-in/sms-otp/verify', { phone: '+79991234567', code });
    expect(v.status).toBe(200);
    expect(v.body.user).toEqual({ id: expect.any(String), phone: '+79991234567' });
    const s = await api.session(v.body.token);
    expect(s.body.user).toMatchObject({ email: null, provider: 'sms' });
    expect((await api.post('/sign-in/sms-otp/send', { phone: '89991234567' })).body.code).toBe('INVALID_REQUEST');
  });

  it('is off until configured; the log sender never writes the code', async () => {
    const p = await stack.createProject('codes-sms-log');
    const api = client(stack, p.keys.live, { 'x-service-client-ip': freshIp() });
    expect((await api.post('/sign-in/sms-otp/send', { phone: '+15551234567' })).body.code).toBe('PROVIDER_NOT_ENABLED');
    await provider(stack, p, 'sms', {});
    expect((await api.post('/sign-in/sms-otp/send', { phone: '+15551234567' })).status).toBe(200);
    const logged = await logLines(stack, (l) => l.includes('log sender'));
    expect(logged.length).toBeGreaterThan(0);
    for (const l of logged) {
      const { to, msg } = JSON.parse(l) as { to: string; msg: string };
      expect(`${to} ${msg}`).not.toMatch(/\d{6}/);
      expect(to).not.toContain('1234567');
    }
  });
});

// ---------------------------------------------------------------- sessions

/** Signs `email` in with an email code (through a test key, whose codes are readable). */
async function signIn(p: Project, email: string, key = p.keys.test): Promise<{ token: string; user: { id: string } }> {
  const api = client(stack, key, { 'x-service-client-ip': freshIp(), 'user-agent': 'SessionTest/2.0' });
  await api.post('/sign-in/email-otp/send', { email });
  const code = (await api.get(`/test/code?email=${email}`)).body.code;
  const v = await api.post('/sign-in/email-otp/verify', { email, code });
  expect(v.status, JSON.stringify(v.body)).toBe(200);
  return v.body;
}

describe('GET /session and POST /sign-out', () => {
  it('answers {user, session}; sign-out makes the token invalid at once', async () => {
    const p = await stack.createProject('sess');
    const api = client(stack, p.keys.test);
    const { token, user } = await signIn(p, 'sam@example.com');
    const s = await api.session(token);
    expect(s.status).toBe(200);
    expect(s.body).toEqual({
      user: { id: user.id, email: 'sam@example.com', emailVerified: true, name: null, avatarUrl: null, provider: 'email', createdAt: expect.any(String) },
      session: { id: expect.any(String), expiresAt: expect.any(String) },
    });
    // Default lifetime: 30 days.
    const days = (Date.parse(s.body.session.expiresAt) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);
    // Warm the cache, then sign out: the very next check fails (no revocation lag).
    for (let i = 0; i < 3; i++) expect((await api.session(token)).status).toBe(200);
    expect((await api.signOut(token)).body).toEqual({ success: true });
    const after = await api.session(token);
    expect(after.status).toBe(401);
    expect(after.body).toMatchObject({ code: 'SESSION_INVALID', error: expect.any(String) });
    expect((await api.signOut(token)).body.code).toBe('SESSION_INVALID');
  });

  it('answers a cached check from memory exactly as the ordinary path does; browsers and refusals take the ordinary path', async () => {
    const p = await stack.createProject('sess-fast');
    const { token } = await signIn(p, 'fast@example.com');
    const fromMemory = async () => Number(/^postgate_fast_lane_answers_total (\d+)$/m.exec(await (await fetch(`${stack.url}/metrics`)).text())?.[1] ?? 0);
    const check = async (headers: Record<string, string> = {}) => {
      const res = await fetch(`${stack.url}/api/v1/auth/session`, { headers: { 'x-service-key': p.keys.test, authorization: `Bearer ${token}`, ...headers } });
      return {
        status: res.status,
        type: res.headers.get('content-type'),
        length: res.headers.get('content-length'),
        cors: res.headers.get('access-control-allow-origin'),
        text: await res.text(),
      };
    };
    // The first check finds the session only in the store: Fastify answers, and the cache fills.
    const before = await fromMemory();
    const ordinary = await check();
    expect(ordinary.status).toBe(200);
    const cached = await check();
    expect(cached).toEqual(ordinary);
    expect(JSON.parse(cached.text).user.email).toBe('fast@example.com');
    expect(await fromMemory()).toBe(before + 1);
    // A browser request carries an Origin: Fastify answers, with its CORS headers (and its origin check refuses this one).
    const counted = await fromMemory();
    const browser = await check({ origin: 'https://elsewhere.example' });
    expect(browser.cors).toBe('https://elsewhere.example');
    expect(JSON.parse(browser.text).code).toBe('REDIRECT_NOT_ALLOWED');
    // The other kind's key and a query string are the ordinary path's to answer; so is a signed-out token.
    expect((await client(stack, p.keys.live).session(token)).body.code).toBe('SESSION_INVALID');
    const withQuery = await fetch(`${stack.url}/api/v1/auth/session?x=1`, { headers: { 'x-service-key': p.keys.test, authorization: `Bearer ${token}` } });
    expect(withQuery.status).toBe(200);
    expect(await fromMemory()).toBe(counted);
    await client(stack, p.keys.test).signOut(token);
    expect((await check()).status).toBe(401);
    expect(await fromMemory()).toBe(counted);
  });

  it('each sign-in is a new session; signing one out leaves the others', async () => {
    const p = await stack.createProject('sess-multi');
    const api = client(stack, p.keys.test);
    const a = await signIn(p, 'multi@example.com');
    const b = await signIn(p, 'multi@example.com');
    expect(a.user.id).toBe(b.user.id);
    expect(a.token).not.toBe(b.token);
    await api.signOut(a.token);
    expect((await api.session(a.token)).status).toBe(401);
    expect((await api.session(b.token)).status).toBe(200);
  });

  it('needs the key and a bearer token', async () => {
    const p = await stack.createProject('sess-auth');
    const { token } = await signIn(p, 'x@example.com');
    expect((await stack.api('GET', '/api/v1/auth/session', undefined, undefined, { authorization: `Bearer ${token}` })).body.code).toBe('INVALID_API_KEY');
    expect((await client(stack, p.keys.test).get('/session')).body.code).toBe('SESSION_INVALID');
    expect((await client(stack, p.keys.test).session('pgs_made-up')).status).toBe(401);
  });

  it('expires after the project session lifetime', async () => {
    const p = await stack.createProject('sess-ttl');
    await stack.cli('auth', 'set', '--project', p.slug, '--session-ttl', '3600');
    const { token } = await signIn(p, 'ttl@example.com');
    const s = await client(stack, p.keys.test).session(token);
    expect(Date.parse(s.body.session.expiresAt) - Date.now()).toBeLessThanOrEqual(3600_000);
    try {
      await setClock(stack, 3599_000);
      expect((await client(stack, p.keys.test).session(token)).status).toBe(200);
      await setClock(stack, 3601_000);
      expect((await client(stack, p.keys.test).session(token)).body.code).toBe('SESSION_INVALID');
    } finally {
      await setClock(stack, 0);
    }
  });
});

describe('isolation', () => {
  it("a token works only with its own project's key of its own kind", async () => {
    const a = await stack.createProject('iso-a');
    const b = await stack.createProject('iso-b');
    const { token } = await signIn(a, 'iso@example.com');
    expect((await client(stack, a.keys.test).session(token)).status).toBe(200);
    expect((await client(stack, a.keys.live).session(token)).body.code).toBe('SESSION_INVALID');
    expect((await client(stack, b.keys.test).session(token)).body.code).toBe('SESSION_INVALID');
    expect((await client(stack, b.keys.test).signOut(token)).body.code).toBe('SESSION_INVALID');
    expect((await client(stack, a.keys.test).session(token)).status).toBe(200);
  });

  it('the test environment has its own users', async () => {
    const p = await stack.createProject('iso-env');
    await provider(stack, p, 'telegram', { botToken: TEST_BOT });
    // Each payload is usable once: a different auth_date makes a new one for the same account.
    // One base time: reading the clock per call could land two calls on the same auth_date.
    const base = unixNow();
    const tg = (key: string, age: number) =>
      client(stack, key).post('/sign-in/telegram/widget', signedWidget({ id: 5150, first_name: 'Same', auth_date: base - age }));
    const live = await tg(p.keys.live, 1);
    const liveAgain = await tg(p.keys.live, 2);
    const test = await tg(p.keys.test, 3);
    expect([live.status, liveAgain.status, test.status]).toEqual([200, 200, 200]);
    expect(liveAgain.body.user.id).toBe(live.body.user.id);
    expect(test.body.user.id).not.toBe(live.body.user.id);
    expect((await client(stack, p.keys.live).session(test.body.token)).status).toBe(401);
  });

  it('an auth-scope key (browser-safe) works for the auth API and is refused by the mail API', async () => {
    const p = await stack.createProject('iso-scope');
    const key = (await stack.admin('POST', `/admin/v1/projects/${p.slug}/keys`, { kind: 'test', scope: 'auth' })).key as string;
    const { token } = await signIn(p, 'scope@example.com', key);
    expect((await client(stack, key).session(token)).status).toBe(200);
    const liveAuth = (await stack.admin('POST', `/admin/v1/projects/${p.slug}/keys`, { kind: 'live', scope: 'auth' })).key as string;
    expect((await stack.api('POST', '/v1/emails', liveAuth, { from: 'a@b.co', to: 'c@d.co', subject: 's', text: 't' })).status).toBe(401);
    expect((await client(stack, liveAuth).get('/providers')).status).toBe(200);
  });
});
