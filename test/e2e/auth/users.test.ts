// User management over HTTP (auth/users): a `users`-scope key (and an `all` key) lists, searches, reads,
// updates, bans, unbans and deletes the users of its own project and environment, and ends their sessions;
// an auth-scope key cannot, a users key can do nothing else. A ban ends the user's sessions at once and
// sign-in answers USER_BANNED until the ban's end; deletion leaves an audit entry without personal data.
// Attacks: another project's key, a test key on live users, LIKE wildcards, enumeration. Each change is a
// webhook message. The operator's admin routes and CLI do the same.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stepAt, totpAt } from '../../../auth/two-factor/totp.js';
import { Stack, sleep, type Project } from '../../helpers/stack.js';
import { TEST_BOT, client, provider, signedWidget } from './setup.js';

interface Received {
  json: any;
}

let stack: Stack;
let server: http.Server;
let rx: string;
let A: Project;
let B: Project;
/** users-scope keys: A live, A test, B test; an auth-scope key of A. */
const keys = { aLive: '', aTest: '', bTest: '', aAuth: '' };
const received: Received[] = [];
let ipSeq = 0;
let tgSeq = 0;
let clockOffset = 0;

const USER_EVENTS = ['user.updated', 'user.banned', 'user.unbanned', 'user.deleted', 'session.revoked'];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ json: JSON.parse(body) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  rx = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  stack = await Stack.start({
    env: { POSTGATE_TEST_CLOCK: '1', POSTGATE_SYSTEM_FROM: 'no-reply@postgate.test' },
    config: { webhooks: { retryDelays: [1], maxAgeSeconds: 3600, timeoutMs: 2000, allowCidrs: ['127.0.0.0/8'] } },
  });
  A = await stack.createProject('users-a');
  B = await stack.createProject('users-b');
  for (const p of [A, B]) {
    await provider(stack, p, 'email', { methods: ['otp'] });
    await provider(stack, p, 'telegram', { botToken: TEST_BOT });
  }
  const key = async (p: Project, kind: string, scope: string) =>
    (await stack.admin('POST', `/admin/v1/projects/${p.slug}/keys`, { kind, scope })).key as string;
  keys.aLive = await key(A, 'live', 'users');
  keys.aTest = await key(A, 'test', 'users');
  keys.bTest = await key(B, 'test', 'users');
  keys.aAuth = await key(A, 'test', 'auth');
  const hook = await stack.api('POST', '/v1/webhooks', A.keys.live, { endpoint: `${rx}/hook`, events: USER_EVENTS });
  expect(hook.status).toBe(201);
}, 90_000);

afterAll(async () => {
  await stack?.stop();
  server?.close();
});

/** The user-management API with a key. */
const users = (key: string) => ({
  get: (p = '') => stack.api('GET', `/api/v1/auth/users${p}`, undefined, undefined, { 'x-service-key': key }),
  patch: (p: string, body: unknown) => stack.api('PATCH', `/api/v1/auth/users${p}`, undefined, body, { 'x-service-key': key }),
  post: (p: string, body: unknown = {}) => stack.api('POST', `/api/v1/auth/users${p}`, undefined, body, { 'x-service-key': key }),
  del: (p: string) => stack.api('DELETE', `/api/v1/auth/users${p}`, undefined, undefined, { 'x-service-key': key }),
});

const advance = async (ms: number) => {
  clockOffset += ms;
  await stack.admin('POST', '/admin/v1/test/clock', { offset_ms: clockOffset });
};

/** An email-code sign-in in the test environment (the code is read back, never sent). */
async function codeSignIn(email: string, p = A) {
  const api = client(stack, p.keys.test, { 'x-service-client-ip': `198.51.100.${(ipSeq++ % 250) + 1}`, 'user-agent': 'users-e2e/1' });
  const sent = await api.post('/sign-in/email-otp/send', { email });
  expect(sent.status).toBe(200);
  const code = (await api.get(`/test/code?email=${encodeURIComponent(email)}`)).body.code as string;
  return api.post('/sign-in/email-otp/verify', { email, code });
}
async function signedIn(email: string, p = A): Promise<{ token: string; user: any }> {
  const r = await codeSignIn(email, p);
  expect(r.status).toBe(200);
  return r.body;
}
/** A Telegram widget sign-in (works with live keys: nothing to read back). */
async function telegram(key: string) {
  const id = 7000 + ++tgSeq;
  const r = await client(stack, key).post(
    '/sign-in/telegram/widget',
    signedWidget({ id, first_name: `Tg ${id}`, auth_date: Math.floor((Date.now() + clockOffset) / 1000) - 5 }),
  );
  expect(r.status).toBe(200);
  return r.body as { token: string; user: any };
}
/** The admin API with the operator's token, any answer (stack.admin throws on an error status). */
const adminRaw = (method: string, p: string, body?: unknown) =>
  stack.adminApi(method, p, fs.readFileSync(path.join(stack.dataDir, 'admin-token'), 'utf8').trim(), body);
const session = (p: Project, token: string, kind: 'live' | 'test' = 'test') => client(stack, p.keys[kind]).session(token);

async function messages(pred: (m: Received) => boolean, count: number, timeoutMs = 15_000): Promise<Received[]> {
  const until = Date.now() + timeoutMs;
  while (received.filter(pred).length < count && Date.now() < until) await sleep(50);
  return received.filter(pred);
}

describe('keys', () => {
  it('a users key manages users only; an auth-scope key cannot manage users; an all key can', async () => {
    const u = client(stack, keys.aTest);
    for (const r of [await u.post('/sign-in/email-otp/send', { email: 'x@users.test' }), await u.get('/providers'), await u.session('pgs_x')]) {
      expect(r.status).toBe(401);
      expect(r.body.code).toBe('INVALID_API_KEY');
    }
    const mail = await stack.api('POST', '/v1/emails', keys.aLive, { from: 'a@users.test', to: 'b@users.test', subject: 's', text: 't' });
    expect(mail.status).toBe(401);
    const byAuth = await users(keys.aAuth).get();
    expect(byAuth.status).toBe(401);
    expect(byAuth.body).toMatchObject({ code: 'INVALID_API_KEY', error: 'This test key (auth scope) cannot call this API' });
    expect((await users(A.keys.test).get()).status).toBe(200);
    expect((await users(keys.aTest).get()).status).toBe(200);
    expect((await users('pg_test_nonsense').get()).status).toBe(401);
  });
});

describe('the OpenAPI document', () => {
  it('documents the routes (tag users, the service key) and leaves the admin ones out', async () => {
    const doc = (await stack.api('GET', '/openapi.json', undefined)).body;
    const ops = Object.entries(doc.paths as Record<string, Record<string, any>>)
      .filter(([p]) => p.startsWith('/api/v1/auth/users'))
      .flatMap(([p, item]) => Object.entries(item).map(([m, op]) => [`${m.toUpperCase()} ${p}`, op] as const));
    expect(Object.fromEntries(ops.map(([k, op]) => [k, op.operationId]))).toEqual({
      'GET /api/v1/auth/users': 'listUsers',
      'GET /api/v1/auth/users/{id}': 'getUser',
      'PATCH /api/v1/auth/users/{id}': 'updateUser',
      'DELETE /api/v1/auth/users/{id}': 'deleteUser',
      'POST /api/v1/auth/users/{id}/ban': 'banUser',
      'POST /api/v1/auth/users/{id}/unban': 'unbanUser',
      'GET /api/v1/auth/users/{id}/sessions': 'listUserSessions',
      'DELETE /api/v1/auth/users/{id}/sessions': 'revokeUserSessions',
      'DELETE /api/v1/auth/users/{id}/sessions/{sessionId}': 'revokeUserSession',
    });
    for (const [, op] of ops) expect(op).toMatchObject({ tags: ['users'], security: [{ serviceKey: [] }] });
    expect(Object.keys(doc.paths).filter((p) => p.includes('/users') && p.startsWith('/admin'))).toEqual([]);
  });
});

describe('listing and searching', () => {
  it('pages newest first, searches by address, prefix (wildcards literal), identity and time, and refuses bad input', async () => {
    const made = [];
    for (const e of ['Lia@List.test', 'l_b@list.test', 'lxb@list.test']) made.push((await signedIn(e.toLowerCase())).user.id);
    const api = users(keys.aTest);
    const p1 = await api.get('?limit=2&email_prefix=l');
    expect(p1.status).toBe(200);
    expect(p1.body.data.map((u: any) => u.id)).toEqual([made[2], made[1]]);
    expect(p1.body).toMatchObject({ hasMore: true, nextCursor: made[1] });
    const p2 = await api.get(`?limit=2&email_prefix=l&after=${p1.body.nextCursor}`);
    expect(p2.body).toMatchObject({ hasMore: false, nextCursor: null });
    expect(p2.body.data.map((u: any) => u.id)).toEqual([made[0]]);
    expect(p2.body.data[0]).toMatchObject({ email: 'lia@list.test', emailVerified: true, banned: false, ban: null, metadata: {}, provider: 'email' });

    const ids = async (q: string) => (await api.get(`?${q}`)).body.data.map((u: any) => u.id);
    expect(await ids('email=LIA%40list.TEST')).toEqual([made[0]]);
    expect(await ids('email_prefix=l_')).toEqual([made[1]]);
    expect(await ids('email_prefix=%25')).toEqual([]);
    expect(await ids('email_prefix=_')).toEqual([]);
    expect(await ids('email=%25%40list.test')).toEqual([]);
    expect(await ids('email_prefix=l%25')).toEqual([]);
    expect(await ids(`provider=email&subject=${encodeURIComponent('lxb@list.test')}`)).toEqual([made[2]]);
    expect(await ids(`created_after=${encodeURIComponent(new Date(Date.now() + clockOffset + 60_000).toISOString())}`)).toEqual([]);
    expect((await ids(`last_sign_in_after=${encodeURIComponent(new Date(Date.now() + clockOffset - 600_000).toISOString())}&email_prefix=l`)).sort()).toEqual(
      [...made].sort(),
    );

    for (const q of ['limit=0', 'limit=101', 'after=nope', 'created_after=yesterday', 'subject=x', 'colour=red', `after=${crypto.randomUUID()}`]) {
      const r = await api.get(`?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.code, q).toBe('INVALID_REQUEST');
    }
  });
});

describe('one user', () => {
  it('reads it with identities and live sessions, updates flags, name and metadata (16 kB at most)', async () => {
    const s = await signedIn('uma@one.test');
    const api = users(keys.aTest);
    const d = await api.get(`/${s.user.id}`);
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({
      id: s.user.id,
      email: 'uma@one.test',
      identities: [{ provider: 'email', subject: 'uma@one.test' }],
      passkeys: [],
      twoFactor: { totp: false, confirmedAt: null, backupCodesLeft: 0 },
    });
    expect(d.body.sessions).toHaveLength(1);
    expect(d.body.sessions[0]).toMatchObject({ provider: 'email', userAgent: 'users-e2e/1', ip: expect.any(String) });

    const up = await api.patch(`/${s.user.id}`, { name: 'Uma T.', metadata: { plan: 'pro', seats: 3 }, emailVerified: false });
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({ name: 'Uma T.', metadata: { plan: 'pro', seats: 3 }, emailVerified: false });
    // The session check sees the change at once (the cached user was dropped).
    expect((await session(A, s.token)).body.user).toMatchObject({ name: 'Uma T.', emailVerified: false });
    const big = await api.patch(`/${s.user.id}`, { metadata: { blob: 'x'.repeat(16 * 1024) } });
    expect(big.status).toBe(400);
    expect(big.body.error).toMatch(/metadata is \d+ bytes as JSON; at most 16384/);
    for (const body of [{}, { email: 'new@one.test' }, { name: 5 }, { metadata: [1] }]) expect((await api.patch(`/${s.user.id}`, body)).status).toBe(400);
    expect((await api.get(`/${s.user.id}`)).body.metadata).toEqual({ plan: 'pro', seats: 3 });

    const msgs = await messages((m) => m.json.type === 'user.updated' && m.json.data.user_id === s.user.id, 1);
    expect(msgs[0]!.json.data).toMatchObject({ changed: ['email_verified', 'name', 'metadata'], email: 'uma@one.test', env: 'test' });
  });

  it('answers 404 alike for unknown ids and other projects’ or environments’ users; 400 for malformed ids', async () => {
    const theirs = await signedIn('bea@b.test', B);
    const live = await telegram(A.keys.live);
    const unknown = crypto.randomUUID();
    const api = users(keys.aTest);
    const answers = [];
    for (const id of [theirs.user.id, live.user.id, unknown]) {
      for (const r of [
        await api.get(`/${id}`),
        await api.patch(`/${id}`, { name: 'Mallory' }),
        await api.post(`/${id}/ban`, { reason: 'x' }),
        await api.post(`/${id}/unban`),
        await api.get(`/${id}/sessions`),
        await api.del(`/${id}/sessions`),
        await api.del(`/${id}`),
      ]) {
        expect(r.status).toBe(404);
        answers.push(JSON.stringify(r.body));
      }
    }
    expect(new Set(answers)).toEqual(
      new Set([JSON.stringify({ error: 'No user with this id', code: 'NOT_FOUND', name: 'not_found', message: 'No user with this id', statusCode: 404 })]),
    );
    // Untouched: B's user and its session, the live user and its session.
    const mine = await users(keys.bTest).get(`/${theirs.user.id}`);
    expect(mine.body).toMatchObject({ name: null, banned: false });
    expect((await session(B, theirs.token)).status).toBe(200);
    expect((await session(A, live.token, 'live')).status).toBe(200);
    // The test key lists no live user; the live key does.
    expect((await api.get('?provider=telegram')).body.data).toEqual([]);
    expect((await users(keys.aLive).get('?provider=telegram')).body.data.map((u: any) => u.id)).toContain(live.user.id);
    expect((await users(keys.aLive).get(`/${live.user.id}`)).status).toBe(200);
    for (const p of ['/not-a-uuid', '/1%27%20OR%201=1']) expect((await api.get(p)).status).toBe(400);
    expect((await api.del(`/${unknown}/sessions/nope`)).status).toBe(400);
  });
});

describe('bans', () => {
  it('end live sessions at once, refuse sign-in with USER_BANNED until lifted, and are webhook messages', async () => {
    const s = await signedIn('ben@ban.test');
    const api = users(keys.aTest);
    expect((await session(A, s.token)).status).toBe(200);
    const ban = await api.post(`/${s.user.id}/ban`, { reason: 'chargebacks' });
    expect(ban.status).toBe(200);
    expect(ban.body).toMatchObject({ banned: true, ban: { reason: 'chargebacks', expiresAt: null } });
    const check = await session(A, s.token);
    expect(check.status).toBe(401);
    expect(check.body.code).toBe('SESSION_INVALID');
    await advance(61_000); // the code resend cooldown
    const again = await codeSignIn('ben@ban.test');
    expect(again.status).toBe(403);
    expect(again.body).toMatchObject({ code: 'USER_BANNED', error: 'This account is banned' });
    expect((await api.get(`/${s.user.id}`)).body.sessions).toEqual([]);
    expect((await api.post(`/${s.user.id}/unban`)).body).toMatchObject({ banned: false, ban: null });
    await advance(61_000);
    expect((await codeSignIn('ben@ban.test')).status).toBe(200);

    const mine = (m: Received) => m.json.data.user_id === s.user.id;
    const got = await messages((m) => mine(m) && ['user.banned', 'user.unbanned', 'session.revoked'].includes(m.json.type), 3);
    expect(got.find((m) => m.json.type === 'user.banned')!.json.data).toMatchObject({ reason: 'chargebacks', banned_until: null });
    expect(got.find((m) => m.json.type === 'session.revoked')!.json.data).toMatchObject({ reason: 'user_banned' });
    expect(got.some((m) => m.json.type === 'user.unbanned')).toBe(true);
  });

  it('with an end lets sign-in back after it', async () => {
    const s = await signedIn('bo@ban.test');
    const until = new Date(Date.now() + clockOffset + 3_600_000).toISOString();
    const ban = await users(keys.aTest).post(`/${s.user.id}/ban`, { reason: 'cool off', until });
    expect(ban.body.ban).toMatchObject({ reason: 'cool off', expiresAt: until });
    expect((await users(keys.aTest).post(`/${s.user.id}/ban`, { reason: 'x', until: new Date(Date.now() + clockOffset - 1000).toISOString() })).status).toBe(
      400,
    );
    await advance(61_000);
    const refused = await codeSignIn('bo@ban.test');
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe(`This account is banned until ${until}`);
    await advance(3_600_000);
    expect((await codeSignIn('bo@ban.test')).status).toBe(200);
    expect((await users(keys.aTest).get(`/${s.user.id}`)).body).toMatchObject({ banned: false, ban: null });
  });
});

describe('sessions', () => {
  it('lists a user’s live sessions, ends one, then all', async () => {
    const one = await signedIn('sam@sess.test');
    const two = await telegram(A.keys.test);
    await advance(61_000);
    const three = await signedIn('sam@sess.test');
    const api = users(keys.aTest);
    const list = await api.get(`/${one.user.id}/sessions`);
    expect(list.body.data).toHaveLength(2);
    const firstId = list.body.data[1].id;
    // Another user's session is not this user's to end.
    const foreign = (await api.get(`/${two.user.id}/sessions`)).body.data[0].id;
    expect((await api.del(`/${one.user.id}/sessions/${foreign}`)).status).toBe(404);
    expect((await session(A, two.token)).status).toBe(200);
    expect(await api.del(`/${one.user.id}/sessions/${firstId}`)).toMatchObject({ status: 200, body: { id: firstId, revoked: true } });
    expect((await session(A, one.token)).status).toBe(401);
    expect((await session(A, three.token)).status).toBe(200);
    expect((await api.del(`/${one.user.id}/sessions`)).body).toEqual({ revoked: 1 });
    expect((await session(A, three.token)).status).toBe(401);
    const got = await messages((m) => m.json.type === 'session.revoked' && m.json.data.user_id === one.user.id && m.json.data.reason === 'admin', 2);
    expect(got).toHaveLength(2);
  });
});

describe('deletion', () => {
  it('ends sessions, removes the user, keeps an audit entry without the data; signing in again makes a new user', async () => {
    const s = await signedIn('del@gone.test');
    const api = users(keys.aTest);
    const gone = await api.del(`/${s.user.id}`);
    expect(gone).toMatchObject({ status: 200, body: { id: s.user.id, deleted: true } });
    expect((await session(A, s.token)).status).toBe(401);
    expect((await api.get(`/${s.user.id}`)).status).toBe(404);
    expect((await api.get('?email=del%40gone.test')).body.data).toEqual([]);
    const log = (await stack.admin('GET', `/admin/v1/projects/${A.slug}/audit?limit=100`)).data.filter((e: any) => e.user_id === s.user.id);
    expect(log.map((e: any) => e.type)).toEqual(['user.deleted', 'session.revoked', 'session.created', 'user.created']);
    for (const e of log) expect(e).toMatchObject({ email: null, phone: null, ip: null, user_agent: null });
    const [deleted] = await messages((m) => m.json.type === 'user.deleted' && m.json.data.user_id === s.user.id, 1);
    expect(deleted!.json.data).toMatchObject({ email: null, phone: null, ip: null, user_agent: null });
    await advance(61_000);
    const back = await signedIn('del@gone.test');
    expect(back.user.id).not.toBe(s.user.id);
  });
});

describe('the operator', () => {
  it('manages users under the admin listener (env=test) and with the CLI', async () => {
    const s = await signedIn('op@admin.test');
    const base = `/admin/v1/projects/${A.slug}/auth/users`;
    expect((await stack.admin('GET', `${base}?email=op%40admin.test`)).data).toEqual([]);
    const list = await stack.admin('GET', `${base}?env=test&email=op%40admin.test`);
    expect(list.data.map((u: any) => u.id)).toEqual([s.user.id]);
    const banned = await stack.admin('POST', `${base}/${s.user.id}/ban?env=test`, { reason: 'operator' });
    expect(banned).toMatchObject({ banned: true });
    expect((await session(A, s.token)).status).toBe(401);
    expect((await stack.adminApi('GET', `${base}/${s.user.id}?env=test`, 'wrong-token')).status).toBe(401);
    expect((await adminRaw('GET', `${base}/${s.user.id}`)).status).toBe(404);
    expect((await adminRaw('GET', '/admin/v1/projects/nope/auth/users')).status).toBe(404);
    expect((await adminRaw('GET', `${base}/not-a-uuid?env=test`)).status).toBe(400);
    expect((await adminRaw('GET', `${base}?env=staging`)).status).toBe(400);
    const shown = await stack.cli('users', 'show', s.user.id, '--project', A.slug, '--env', 'test');
    expect(shown).toContain('banned: operator');
    expect((await adminRaw('POST', `${base}/${s.user.id}/unban?env=test`)).body).toMatchObject({ banned: false });
    expect(await stack.cli('users', 'list', '--project', A.slug, '--env', 'test', '--email', 'op@admin.test')).toContain(s.user.id);
    expect(await stack.cli('users', 'delete', s.user.id, '--project', A.slug, '--env', 'test')).toContain(`deleted ${s.user.id}`);
    expect((await adminRaw('GET', `${base}/${s.user.id}?env=test`)).status).toBe(404);
    // Each change is in the operator audit log, by ids only (the log outlives the deleted user's data).
    const log = (await stack.admin('GET', '/admin/v1/audit?limit=100')).data.filter((e: any) => e.target === `project:${A.slug} user:${s.user.id}`);
    expect(log.map((e: any) => e.action)).toEqual(['user.delete', 'user.unban', 'user.ban']);
    expect(log[2].details).toEqual({ env: 'test', reason: 'operator', until: null });
    expect(log[2].actor).toMatch(/^[0-9a-f]{12}$/);
    expect(JSON.stringify(log)).not.toContain('op@admin.test');
  });
});

describe('a user with a second factor', () => {
  it('shows it in the detail; banned, the sign-in is refused before a second factor is asked', async () => {
    await stack.admin('PATCH', `/admin/v1/projects/${A.slug}/auth/settings`, { twoFactor: 'optional' });
    const s = await signedIn('tf@two.test');
    const c = client(stack, A.keys.test);
    const bearer = { authorization: `Bearer ${s.token}` };
    const setup = await c.post('/two-factor/totp/setup', {}, bearer);
    expect(setup.status).toBe(200);
    const code = () => totpAt(setup.body.secret, stepAt(Date.now() + clockOffset));
    expect((await c.post('/two-factor/totp/confirm', { code: code() }, bearer)).status).toBe(200);
    const d = (await users(keys.aTest).get(`/${s.user.id}`)).body;
    expect(d.twoFactor).toMatchObject({ totp: true, confirmedAt: expect.any(String), backupCodesLeft: 10 });

    expect((await users(keys.aTest).post(`/${s.user.id}/ban`, { reason: 'abuse' })).status).toBe(200);
    await advance(61_000); // the code resend cooldown, and a new TOTP step
    // The ban's gate runs before the second factor's: no pending ticket, and nothing to guess a code for.
    const first = await codeSignIn('tf@two.test');
    expect(first.status).toBe(403);
    expect(first.body.code).toBe('USER_BANNED');
    expect(first.body.pendingToken).toBeUndefined();
    expect((await users(keys.aTest).get(`/${s.user.id}/sessions`)).body.data).toEqual([]);
  });
});
