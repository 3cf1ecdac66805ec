// Sign-in events over real sockets: email-code and OAuth sign-ins produce user.created,
// session.created, session.revoked and sign_in.failed on a real webhook receiver, signed like
// mail messages and carrying no code, token or secret; sign_in.failed is rate-limited with a
// count of what was left out; the same events are in the audit log (admin API and CLI), which
// keeps auth.auditRetentionDays.
import fs from 'node:fs';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, sleep, type Project } from '../../helpers/stack.js';
import { verify } from '../../../control/webhooks/signature.js';
import { APP, allowOrigin, client, provider, viaLoopback } from './setup.js';
import { browse, startOpenIdProvider, type OpenIdProvider } from './peers.js';

interface Received {
  path: string;
  headers: Record<string, string | undefined>;
  body: string;
  json: any;
}

const AUTH_EVENTS = ['user.created', 'session.created', 'session.revoked', 'sign_in.failed'];
const RETENTION_DAYS = 7;
const DAY = 86_400_000;

let stack: Stack;
let idp: OpenIdProvider;
let server: http.Server;
let rx: string;
let base: string;
let p: Project;
const hooks: Record<string, { id: string; secret: string }> = {};
const received: Received[] = [];
/** Every code, token and svc_code the tests saw: none may reach a payload or the audit log. */
const secrets: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ path: req.url!, headers: req.headers as Record<string, string>, body, json: JSON.parse(body) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  rx = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  stack = await Stack.start({
    env: { POSTGATE_TEST_CLOCK: '1', POSTGATE_SYSTEM_FROM: 'no-reply@postgate.test' },
    config: {
      webhooks: { retryDelays: [1], maxAgeSeconds: 3600, timeoutMs: 2000, allowCidrs: ['127.0.0.0/8'] },
      auth: { auditRetentionDays: RETENTION_DAYS },
    },
  });
  base = `http://localhost:${new URL(stack.url).port}`;
  idp = await startOpenIdProvider([{ client_id: 'ev-client', client_secret: 'ev-secret', redirect_uris: [`${base}/callback/oidc`] }]);
  p = await stack.createProject('events');
  // The events are under test here, not the browser binding (login-csrf.test.ts): OAuth sign-ins exchange svc_code bare.
  await stack.admin('PATCH', `/admin/v1/projects/${p.slug}/auth/settings`, { requireCodeVerifier: false });
  await provider(stack, p, 'email', { methods: ['otp'] });
  await provider(stack, p, 'oidc', { clientId: 'ev-client', clientSecret: 'ev-secret', issuer: idp.issuer });
  await allowOrigin(stack, p);
  const register = async (name: string, body: Record<string, unknown>, key = p.keys.live) => {
    const r = await stack.api('POST', '/v1/webhooks', key, body);
    expect(r.status).toBe(201);
    hooks[name] = { id: r.body.id, secret: r.body.secret };
  };
  // Resend's names, ours, and an endpoint with no filter (every email event, no auth event).
  await register('auth', { endpoint: `${rx}/auth`, events: AUTH_EVENTS });
  await register('failed', { url: `${rx}/failed`, statuses: ['sign_in.failed'] });
  await register('mail', { url: `${rx}/mail` });
}, 90_000);
afterAll(async () => {
  await stack?.stop();
  await idp?.close();
  server?.close();
});

const advance = (ms: number) => stack.admin('POST', '/admin/v1/test/clock', { advance_ms: ms });
const setClock = (ms: number) => stack.admin('POST', '/admin/v1/test/clock', { offset_ms: ms });
const audit = async (slug: string, q = '') =>
  (await stack.admin('GET', `/admin/v1/projects/${slug}/audit${q}`)) as { object: string; has_more: boolean; data: any[] };

/** The messages at `path` that satisfy `pred`, once there are `count` of them (and a moment more for strays). */
async function messages(path: string, pred: (m: Received) => boolean, count: number, timeoutMs = 15_000): Promise<Received[]> {
  const until = Date.now() + timeoutMs;
  const hits = () => received.filter((m) => m.path === path && pred(m));
  while (hits().length < count && Date.now() < until) await sleep(50);
  await sleep(300);
  const got = hits();
  if (got.length !== count) throw new Error(`${path}: ${got.length} messages, not ${count}: ${got.map((m) => m.json.type).join(', ')}`);
  return got;
}
const ofType = (m: Received[], type: string) => m.filter((x) => x.json.type === type);

/** Signs in with an email code (test key: the code is read back, never sent) after one wrong try. */
async function codeSignIn(email: string, ip: string, project = p) {
  const api = client(stack, project.keys.test, { 'x-service-client-ip': ip, 'user-agent': 'events-test/1' });
  expect((await api.post('/sign-in/email-otp/send', { email })).status).toBe(200);
  const code = (await api.get(`/test/code?email=${encodeURIComponent(email)}`)).body.code as string;
  const wrong = code === '000000' ? '111111' : '000000';
  expect((await api.post('/sign-in/email-otp/verify', { email, code: wrong })).body.code).toBe('INVALID_CODE');
  const ok = await api.post('/sign-in/email-otp/verify', { email, code });
  expect(ok.status).toBe(200);
  secrets.push(code, ok.body.token);
  return { api, code, token: ok.body.token as string, user: ok.body.user };
}

describe('an email-code sign-in', () => {
  it('sends sign_in.failed, user.created, session.created and, at sign-out, session.revoked: signed, with no code or token', async () => {
    const { api, token, user } = await codeSignIn('jane@inbox.test', '198.51.100.7');
    expect((await api.signOut(token)).status).toBe(200);
    const mine = (m: Received) => m.json.data.user_id === user.id || m.json.data.email === 'j***@inbox.test';
    const got = await messages('/auth', mine, 4);
    for (const m of got) {
      expect(verify(hooks.auth!.secret, m.headers, m.body)).toBe(true);
      expect(m.headers['webhook-id']).toMatch(/^msg_/);
      expect(m.json.created_at).toBe(m.json.timestamp);
    }
    const common = { env: 'test', provider: 'email', ip: '198.51.100.7', user_agent: 'events-test/1' };
    expect(ofType(got, 'sign_in.failed').map((m) => m.json.data)).toEqual([
      {
        ...common,
        id: expect.stringMatching(/^evt_/),
        user_id: null,
        session_id: null,
        email: 'j***@inbox.test',
        phone: null,
        reason: 'invalid_code',
        suppressed: 0,
        created_at: expect.any(String),
      },
    ]);
    expect(ofType(got, 'user.created')[0]!.json.data).toMatchObject({ ...common, user_id: user.id, email: 'jane@inbox.test', session_id: null, reason: null });
    const created = ofType(got, 'session.created')[0]!.json.data;
    expect(created).toMatchObject({ ...common, user_id: user.id, email: 'jane@inbox.test', session_id: expect.any(String) });
    expect(ofType(got, 'session.revoked')[0]!.json.data).toMatchObject({
      env: 'test',
      user_id: user.id,
      session_id: created.session_id,
      reason: 'sign_out',
      ip: '198.51.100.7',
    });

    // The endpoint listing only sign_in.failed got that one; the one with no filter got no auth event.
    expect((await messages('/failed', mine, 1)).map((m) => m.json.type)).toEqual(['sign_in.failed']);
    expect(received.filter((m) => m.path === '/mail' && !m.json.type.startsWith('email.'))).toEqual([]);

    // The audit log has the same four, newest first, with the address masked.
    const log = (await audit('events')).data.filter((e) => e.user_id === user.id || e.email === 'j***@inbox.test');
    expect(log.map((e) => e.type)).toEqual(['session.revoked', 'session.created', 'user.created', 'sign_in.failed']);
    expect(log.map((e) => e.email)).toEqual(['j***@inbox.test', 'j***@inbox.test', 'j***@inbox.test', 'j***@inbox.test']);
    expect(log[3]).toMatchObject({ reason: 'invalid_code', ip: '198.51.100.7', user_agent: 'events-test/1', env: 'test', suppressed: 0 });

    // A second sign-in of the same person opens a session; it creates no user.
    await advance(61_000); // the resend cooldown
    const again = await codeSignIn('jane@inbox.test', '198.51.100.7');
    expect(again.user.id).toBe(user.id);
    const after = (await audit('events')).data.filter((e) => e.user_id === user.id);
    expect(after.map((e) => e.type).slice(0, 2)).toEqual(['session.created', 'session.revoked']);
    expect(after.filter((e) => e.type === 'user.created')).toHaveLength(1);
  });
});

describe('an OAuth sign-in', () => {
  const api = () => client(stack, p.keys.live, { 'x-service-client-ip': '203.0.113.20' });
  async function start(sub: string): Promise<string> {
    idp.loginAs({ sub, email: `${sub}@corp.test`, email_verified: true, name: sub });
    const r = await api().post('/sign-in/social', { provider: 'oidc', method: 'oauth', callbackURL: `${APP}/auth/done` });
    expect(r.status).toBe(200);
    return r.body.url;
  }
  async function svcCode(sub: string): Promise<string> {
    const back = await browse(await start(sub), (u) => u.startsWith(`${base}/callback/`), viaLoopback);
    const res = await fetch(viaLoopback(back), { redirect: 'manual' });
    const code = new URL(res.headers.get('location')!).searchParams.get('svc_code')!;
    secrets.push(code);
    return code;
  }

  it('user.created at the callback, session.created at the exchange, and a reused svc_code revokes that session', async () => {
    const code = await svcCode('olga');
    const ex = await api().post('/exchange-code', { code });
    expect(ex.status).toBe(200);
    secrets.push(ex.body.token);
    const userId = ex.body.user.id;
    const reuse = await api().post('/exchange-code', { code });
    expect(reuse.body.code).toBe('INVALID_CODE');

    const mine = (m: Received) => m.json.data.user_id === userId || (m.json.data.env === 'live' && m.json.type === 'sign_in.failed');
    const got = await messages('/auth', mine, 4);
    for (const m of got) expect(verify(hooks.auth!.secret, m.headers, m.body)).toBe(true);
    expect(ofType(got, 'user.created')[0]!.json.data).toMatchObject({ env: 'live', user_id: userId, email: 'olga@corp.test', provider: 'oidc' });
    const session = ofType(got, 'session.created')[0]!.json.data;
    expect(session).toMatchObject({ env: 'live', user_id: userId, provider: 'oidc', session_id: expect.any(String) });
    expect(ofType(got, 'session.revoked')[0]!.json.data).toMatchObject({ user_id: userId, session_id: session.session_id, reason: 'code_reused' });
    expect(ofType(got, 'sign_in.failed')[0]!.json.data).toMatchObject({ env: 'live', reason: 'invalid_code', ip: '203.0.113.20', user_id: null });
    // The revoked session is really gone.
    expect((await api().session(ex.body.token)).body.code).toBe('SESSION_INVALID');

    // The same person again: a session, no new user.
    const second = await api().post('/exchange-code', { code: await svcCode('olga') });
    secrets.push(second.body.token);
    expect(second.body.user.id).toBe(userId);
    const log = (await audit('events')).data.filter((e) => e.user_id === userId);
    expect(log.map((e) => e.type)).toEqual(['session.created', 'session.revoked', 'session.created', 'user.created']);
  });

  it("a provider's refusal is sign_in.failed provider_refused; the app still gets its ?error=", async () => {
    const state = new URL(await start('mallory')).searchParams.get('state')!;
    // What the provider redirects back with when the user says no.
    const res = await fetch(`${stack.url}/callback/oidc?state=${state}&error=access_denied&iss=${encodeURIComponent(idp.issuer)}`, { redirect: 'manual' });
    expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe('access_denied');
    const [m] = await messages('/auth', (x) => x.json.data.reason === 'provider_refused', 1);
    expect(m!.json).toMatchObject({ type: 'sign_in.failed', data: { env: 'live', provider: 'oidc', reason: 'provider_refused', user_id: null } });
    expect(verify(hooks.auth!.secret, m!.headers, m!.body)).toBe(true);
  });
});

describe('sign_in.failed under a flood', () => {
  it('is recorded 30 times a minute per reason at most; the next one says how many were left out', async () => {
    const flood = await stack.createProject('flood');
    await provider(stack, flood, 'email', { methods: ['otp'] });
    const r = await stack.api('POST', '/v1/webhooks', flood.keys.live, { endpoint: `${rx}/flood`, events: ['sign_in.failed'] });
    const api = client(stack, flood.keys.test, { 'x-service-client-ip': '192.0.2.66' });
    // No code was ever sent to this address: every guess is wrong.
    for (let i = 0; i < 40; i++) {
      const v = await api.post('/sign-in/email-otp/verify', { email: 'target@inbox.test', code: String(100000 + i) });
      expect(v.body.code).toBe('INVALID_CODE');
    }
    const got = await messages('/flood', () => true, 30);
    expect(got.every((m) => m.json.data.reason === 'invalid_code' && m.json.data.suppressed === 0)).toBe(true);
    expect(got.every((m) => verify(r.body.secret, m.headers, m.body))).toBe(true);
    expect((await audit('flood', '?limit=100')).data).toHaveLength(30);

    // A minute later the window is new: the first one through carries the count of the ten left out.
    await advance(61_000);
    await api.post('/sign-in/email-otp/verify', { email: 'target@inbox.test', code: '999999' });
    const [next] = await messages('/flood', (m) => m.json.data.suppressed > 0, 1);
    expect(next!.json.data).toMatchObject({ reason: 'invalid_code', suppressed: 10, email: 't***@inbox.test' });
    const log = await audit('flood', '?limit=1');
    expect(log.data[0]).toMatchObject({ type: 'sign_in.failed', reason: 'invalid_code', suppressed: 10 });
  });
});

describe('the audit log', () => {
  it('pages through the admin API: newest first, after/before, a type filter; bad queries are 400, an unknown project 404', async () => {
    const all = (await audit('events', '?limit=100')).data;
    expect(all.length).toBeGreaterThanOrEqual(12);
    const page1 = await audit('events', '?limit=3');
    expect([page1.object, page1.has_more, page1.data.map((e) => e.id)]).toEqual(['list', true, all.slice(0, 3).map((e) => e.id)]);
    const page2 = await audit('events', `?limit=3&after=${page1.data[2].id}`);
    expect(page2.data.map((e) => e.id)).toEqual(all.slice(3, 6).map((e) => e.id));
    const back = await audit('events', `?limit=2&before=${page2.data[0].id}`);
    expect(back.data.map((e) => e.id)).toEqual(all.slice(1, 3).map((e) => e.id));
    const failed = await audit('events', '?type=sign_in.failed&limit=100');
    expect(failed.data.map((e) => e.id)).toEqual(all.filter((e) => e.type === 'sign_in.failed').map((e) => e.id));
    expect(Object.keys(all[0]).sort()).toEqual(
      ['at', 'email', 'env', 'id', 'ip', 'phone', 'provider', 'reason', 'session_id', 'suppressed', 'type', 'user_agent', 'user_id'].sort(),
    );
    const token = fs.readFileSync(`${stack.dataDir}/admin-token`, 'utf8').trim();
    for (const q of ['?after=a&before=b', '?type=user.exploded', '?limit=0', '?limit=101', '?after=evt_nope', '?cursor=1']) {
      const r = await stack.adminApi('GET', `/admin/v1/projects/events/audit${q}`, token);
      expect([q, r.status, r.body.code]).toEqual([q, 400, 'INVALID_REQUEST']);
    }
    // Another project's cursor is not one of this project's entries.
    const floodCursor = (await audit('flood', '?limit=1')).data[0].id;
    expect((await stack.adminApi('GET', `/admin/v1/projects/events/audit?after=${floodCursor}`, token)).status).toBe(400);
    expect((await stack.adminApi('GET', '/admin/v1/projects/nope/audit', token)).status).toBe(404);
  });

  it('is printed by `postgate audit list`, as a table or --json', async () => {
    const text = await stack.cli('audit', 'list', '--project', 'events', '--type', 'sign_in.failed', '--limit', '1');
    const [header, row, more] = text.trim().split('\n');
    expect(header).toMatch(/^at\s+type\s+env\s+user\s+email\s+provider\s+reason\s+ip\s+id$/);
    expect(row).toMatch(/sign_in\.failed\s+live\s+oidc\s+provider_refused/);
    expect(more).toMatch(/^more: --after evt_[0-9a-f]{32}$/);
    const json = JSON.parse(await stack.cli('audit', 'list', '--project', 'events', '--after', more!.split(' ').pop()!, '--json'));
    expect(json.object).toBe('list');
    expect(json.data.length).toBeGreaterThan(0);
    expect(json.data[0].id).not.toBe(more!.split(' ').pop());
    const flood = await stack.cli('audit', 'list', '--project', 'flood', '--limit', '1');
    expect(flood).toMatch(/invalid_code \(\+10 suppressed\)/);
  });

  it('holds no code, token, svc_code or signing secret, and neither does any webhook message', async () => {
    expect(secrets.length).toBeGreaterThanOrEqual(8);
    const logs = JSON.stringify([(await audit('events', '?limit=100')).data, (await audit('flood', '?limit=100')).data]);
    const bodies = received.map((m) => m.body).join('\n');
    // A 6-digit code is looked for as a whole value: as a bare substring it could sit inside a hex id.
    const holds = (text: string, s: string) => (/^\d{6}$/.test(s) ? new RegExp(`(?<![A-Za-z0-9])${s}(?![A-Za-z0-9])`).test(text) : text.includes(s));
    for (const s of [...secrets, ...Object.values(hooks).map((h) => h.secret)]) {
      expect(holds(logs, s), `audit log holds ${s}`).toBe(false);
      expect(holds(bodies, s), `a webhook message holds ${s}`).toBe(false);
    }
    expect(bodies).not.toMatch(/pgs_/); // session tokens' prefix
  });

  it(`keeps ${RETENTION_DAYS} days: older entries are deleted by control (at start and then periodically)`, async () => {
    const old = await stack.createProject('old');
    await provider(stack, old, 'email', { methods: ['otp'] });
    await setClock(-(RETENTION_DAYS + 1) * DAY);
    const gone = await codeSignIn('gone@inbox.test', '192.0.2.1', old);
    await setClock(-(RETENTION_DAYS - 1) * DAY);
    const kept = await codeSignIn('kept@inbox.test', '192.0.2.2', old);
    await setClock(0);
    const before = (await audit('old')).data;
    expect(before.filter((e) => e.user_id === gone.user.id)).toHaveLength(2);
    expect(before).toHaveLength(6);
    // Nothing filters entries on reading: only deleting them makes them go.
    expect(await stack.stop()).toBe(0);
    await stack.boot();
    let after = before;
    for (const until = Date.now() + 15_000; Date.now() < until && after.length === before.length; await sleep(200)) after = (await audit('old')).data;
    expect(after.map((e) => [e.type, e.user_id ?? e.email])).toEqual([
      ['session.created', kept.user.id],
      ['user.created', kept.user.id],
      ['sign_in.failed', 'k***@inbox.test'],
    ]);
    // Entries of the other projects within the retention stayed.
    expect((await audit('events', '?limit=100')).data.length).toBeGreaterThanOrEqual(12);
  });
});
