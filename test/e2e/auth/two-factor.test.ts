// Two-factor over HTTP on the real stack: enrolment with a code the test computes (RFC 6238), a sign-in
// held as 401 TWO_FACTOR_REQUIRED with a pendingToken, the right code → a session; replayed TOTP codes,
// steps two away, five wrong codes, a ticket used twice, another project's key and an expired ticket
// refused; backup codes single use; required mode enrolling under the ticket; off mode with no gate;
// events in the audit log. Control's clock is moved (the test clock route) so every check runs well
// inside one 30-second step, and the codes of other steps are computed for that clock.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Project, Stack } from '../../helpers/stack.js';
import { stepAt, totpAt } from '../../../auth/two-factor/totp.js';
import { authStack, client, provider, setClock, signedWidget, TEST_BOT } from './setup.js';

let stack: Stack;
let a: Project;
let b: Project;
let offset = 0;
let seq = 0;
let ipSeq = 0;
const serverNow = () => Date.now() + offset;
/** Each test from its own client address, so per-address limits of one do not reach another. */
const freshIp = () => `198.51.100.${++ipSeq}`;

beforeAll(async () => {
  stack = await authStack();
  [a, b] = await Promise.all([stack.createProject('tfa-a', 'Acme & Co'), stack.createProject('tfa-b', 'Other')]);
  await Promise.all([a, b].map((p) => provider(stack, p, 'telegram', { botToken: TEST_BOT })));
  await mode(a, 'optional');
  await mode(b, 'optional');
});
afterAll(async () => {
  await stack?.stop();
});

const mode = (p: Project, twoFactor: 'off' | 'optional' | 'required') => stack.admin('PATCH', `/admin/v1/projects/${p.slug}/auth/settings`, { twoFactor });

/** At least 20 s left in control's current step: moves its clock forward to the next step when fewer are. */
async function pin(): Promise<void> {
  const into = serverNow() % 30_000;
  if (into <= 10_000) return;
  offset += 30_000 - into + 1000;
  await setClock(stack, offset);
}
const codeAt = (secret: string, k = 0) => totpAt(secret, stepAt(serverNow()) + k);

type Api = ReturnType<typeof client>;
const api = (p: Project) => client(stack, p.keys.live, { 'x-service-client-ip': freshIp(), 'user-agent': 'two-factor-test/1' });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A Telegram widget sign-in of user `id` (each payload fresh: a signed field of its own, as each is accepted once). */
const signIn = (c: Api, id: number) =>
  c.post(
    '/sign-in/telegram/widget',
    signedWidget({ id, first_name: `User ${id}`, auth_date: Math.floor(serverNow() / 1000) - 1, attempt: String(++seq) }, TEST_BOT),
  );

/** Signs user `id` in (no factor yet) and turns TOTP on: its secret and backup codes. */
async function enrolled(c: Api, id: number): Promise<{ secret: string; backupCodes: string[]; userId: string }> {
  const first = await signIn(c, id);
  expect(first.status).toBe(200);
  const setup = await c.post('/two-factor/totp/setup', {}, bearer(first.body.token));
  expect(setup.status).toBe(200);
  await pin();
  const done = await c.post('/two-factor/totp/confirm', { code: codeAt(setup.body.secret) }, bearer(first.body.token));
  expect(done.status).toBe(200);
  return { secret: setup.body.secret, backupCodes: done.body.backupCodes, userId: first.body.user.id };
}

/** A held sign-in's ticket. */
async function held(c: Api, id: number): Promise<string> {
  const r = await signIn(c, id);
  expect(r.status).toBe(401);
  expect(r.body.code).toBe('TWO_FACTOR_REQUIRED');
  return r.body.pendingToken;
}

const audit = async (p: Project, type: string) =>
  ((await stack.admin('GET', `/admin/v1/projects/${p.slug}/audit?limit=100&type=${type}`)) as { data: any[] }).data;

describe('two-factor, optional', () => {
  it('a signed-in user enrols an app: setup (otpauth URI, QR code), a wrong first code refused, the right one turns it on with 10 backup codes', async () => {
    const c = api(a);
    const s = await signIn(c, 1001);
    expect(s.status).toBe(200);
    const t = s.body.token;
    expect((await c.get('/two-factor', bearer(t))).body).toEqual({ mode: 'optional', totp: false, confirmedAt: null, backupCodesLeft: 0 });
    const setup = await c.post('/two-factor/totp/setup', {}, bearer(t));
    expect(setup.status).toBe(200);
    expect(setup.body.secret).toMatch(/^[A-Z2-7]{32}$/);
    const uri = new URL(setup.body.otpauthUri);
    expect(uri.protocol).toBe('otpauth:');
    // The project name "Acme & Co" cannot add a parameter: encoded in the label and the issuer.
    expect(setup.body.otpauthUri).toMatch(new RegExp(`^otpauth://totp/Acme%20%26%20Co:${s.body.user.id}\\?secret=`));
    expect([...uri.searchParams.keys()]).toEqual(['secret', 'issuer', 'algorithm', 'digits', 'period']);
    expect(Object.fromEntries(uri.searchParams)).toEqual({ secret: setup.body.secret, issuer: 'Acme & Co', algorithm: 'SHA1', digits: '6', period: '30' });
    expect(setup.body.qrCode).toMatch(/^data:image\/svg\+xml;base64,/);
    expect(Buffer.from(setup.body.qrCode.split(',')[1], 'base64').toString()).toContain('<svg');
    // Not on until confirmed: a sign-in now is not held.
    expect((await signIn(c, 1001)).status).toBe(200);

    await pin();
    const wrong = await c.post('/two-factor/totp/confirm', { code: codeAt(setup.body.secret, 3) }, bearer(t));
    expect(wrong.status).toBe(400);
    expect(wrong.body.code).toBe('INVALID_CODE');
    const ok = await c.post('/two-factor/totp/confirm', { code: codeAt(setup.body.secret) }, bearer(t));
    expect(ok.status).toBe(200);
    expect(ok.body.backupCodes).toHaveLength(10);
    expect(new Set(ok.body.backupCodes).size).toBe(10);
    for (const code of ok.body.backupCodes) expect(code).toMatch(/^[a-z2-9]{5}-[a-z2-9]{5}$/);
    const st = (await c.get('/two-factor', bearer(t))).body;
    expect(st).toMatchObject({ mode: 'optional', totp: true, backupCodesLeft: 10 });
    expect(Date.parse(st.confirmedAt)).toBeGreaterThan(0);
    // A second setup while one is on is refused.
    expect((await c.post('/two-factor/totp/setup', {}, bearer(t))).body.code).toBe('INVALID_REQUEST');
  });

  it('an enrolled user is held: 401 TWO_FACTOR_REQUIRED with a pendingToken; the right code → a session; the ticket works once; the code never again', async () => {
    const c = api(a);
    const { secret, userId } = await enrolled(c, 1002);
    const r = await signIn(c, 1002);
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ code: 'TWO_FACTOR_REQUIRED', methods: ['totp', 'backup_code'], enrol: false, pendingToken: expect.stringMatching(/^pgp_/) });
    expect(Date.parse(r.body.expiresAt) - serverNow()).toBeGreaterThan(4 * 60_000);
    expect(r.body.token).toBeUndefined();
    const ticket = r.body.pendingToken;

    await pin();
    const code = codeAt(secret, 1); // the step after the confirming one
    const v = await c.post('/two-factor/verify', { pendingToken: ticket, code });
    expect(v.status).toBe(200);
    expect(v.body).toMatchObject({ token: expect.stringMatching(/^pgs_/), user: { id: userId, provider: 'telegram' } });
    const sess = await c.session(v.body.token);
    expect(sess.status).toBe(200);
    expect(sess.body.user.id).toBe(userId);

    // The same ticket again, even with another right code: refused.
    const again = await c.post('/two-factor/verify', { pendingToken: ticket, code: codeAt(secret, 1) });
    expect(again.status).toBe(400);
    expect(again.body.code).toBe('INVALID_CODE');
    // The same TOTP code on a new ticket (replay): refused.
    const ticket2 = await held(c, 1002);
    const replay = await c.post('/two-factor/verify', { pendingToken: ticket2, code });
    expect(replay.body.code).toBe('INVALID_CODE');
    // An unknown ticket.
    expect((await c.post('/two-factor/verify', { pendingToken: 'pgp_nothing', code })).body.code).toBe('INVALID_CODE');
  });

  it('codes of the step before and after are accepted, two steps away refused, and no earlier step after a later one', async () => {
    const c = api(a);
    const { secret } = await enrolled(c, 1003);
    // Enrolment used the current step: move two on, so the step before the new one is free.
    offset += 60_000;
    await setClock(stack, offset);
    await pin();
    const t1 = await held(c, 1003);
    expect((await c.post('/two-factor/verify', { pendingToken: t1, code: codeAt(secret, -2) })).body.code).toBe('INVALID_CODE');
    expect((await c.post('/two-factor/verify', { pendingToken: t1, code: codeAt(secret, 2) })).body.code).toBe('INVALID_CODE');
    expect((await c.post('/two-factor/verify', { pendingToken: t1, code: codeAt(secret, -1), method: 'totp' })).status).toBe(200);
    const t2 = await held(c, 1003);
    expect((await c.post('/two-factor/verify', { pendingToken: t2, code: codeAt(secret, 1) })).status).toBe(200);
    // The current step is earlier than the last one used: refused.
    const t3 = await held(c, 1003);
    expect((await c.post('/two-factor/verify', { pendingToken: t3, code: codeAt(secret, 0) })).body.code).toBe('INVALID_CODE');
  });

  it('five wrong codes kill the ticket (TOO_MANY_ATTEMPTS), even for the right code afterwards', async () => {
    const c = api(a);
    const { secret } = await enrolled(c, 1004);
    const ticket = await held(c, 1004);
    await pin();
    const bad = codeAt(secret, 5);
    for (let i = 1; i <= 4; i++) expect((await c.post('/two-factor/verify', { pendingToken: ticket, code: bad })).body.code).toBe('INVALID_CODE');
    const fifth = await c.post('/two-factor/verify', { pendingToken: ticket, code: bad });
    expect([fifth.status, fifth.body.code]).toEqual([429, 'TOO_MANY_ATTEMPTS']);
    expect((await c.post('/two-factor/verify', { pendingToken: ticket, code: codeAt(secret, 1) })).body.code).toBe('TOO_MANY_ATTEMPTS');
    // A new sign-in gets a new ticket.
    expect((await c.post('/two-factor/verify', { pendingToken: await held(c, 1004), code: codeAt(secret, 1) })).status).toBe(200);
  });

  it('backup codes: each works once; new ones void the old; turning two-factor off takes a code', async () => {
    const c = api(a);
    const { secret, backupCodes } = await enrolled(c, 1005);
    const t1 = await held(c, 1005);
    // Typed loosely (upper case, no dash): the same code.
    const typed = backupCodes[0]!.replace('-', '').toUpperCase();
    const ok = await c.post('/two-factor/verify', { pendingToken: t1, code: typed });
    expect(ok.status).toBe(200);
    const t2 = await held(c, 1005);
    expect((await c.post('/two-factor/verify', { pendingToken: t2, code: backupCodes[0], method: 'backup_code' })).body.code).toBe('INVALID_CODE');
    // A backup code is not a TOTP code.
    expect((await c.post('/two-factor/verify', { pendingToken: t2, code: backupCodes[1], method: 'totp' })).body.code).toBe('INVALID_CODE');
    const session = (await c.post('/two-factor/verify', { pendingToken: t2, code: backupCodes[1] })).body.token as string;
    expect((await c.get('/two-factor', bearer(session))).body.backupCodesLeft).toBe(8);

    await pin();
    const fresh = await c.post('/two-factor/backup-codes', { code: codeAt(secret, 1) }, bearer(session));
    expect(fresh.status).toBe(200);
    expect(fresh.body.backupCodes).toHaveLength(10);
    const t3 = await held(c, 1005);
    expect((await c.post('/two-factor/verify', { pendingToken: t3, code: backupCodes[2] })).body.code).toBe('INVALID_CODE');
    expect((await c.post('/two-factor/verify', { pendingToken: t3, code: fresh.body.backupCodes[0] })).status).toBe(200);

    expect((await c.post('/two-factor/disable', { code: 'aaaaa-aaaaa' }, bearer(session))).body.code).toBe('INVALID_CODE');
    const off = await stack.api(
      'DELETE',
      '/api/v1/auth/two-factor',
      undefined,
      { code: fresh.body.backupCodes[1] },
      {
        'x-service-key': a.keys.live,
        ...bearer(session),
      },
    );
    expect([off.status, off.body]).toEqual([200, { success: true }]);
    expect((await signIn(c, 1005)).status).toBe(200);
    expect((await c.get('/two-factor', bearer(session))).body).toMatchObject({ totp: false, backupCodesLeft: 0 });
  });

  it("another project's key cannot use a ticket (and does not spend it); the signed-in routes need a session", async () => {
    const c = api(a);
    const { secret } = await enrolled(c, 1006);
    const ticket = await held(c, 1006);
    await pin();
    const code = codeAt(secret, 1);
    const foreign = await api(b).post('/two-factor/verify', { pendingToken: ticket, code });
    expect([foreign.status, foreign.body.code]).toEqual([400, 'INVALID_CODE']);
    // The test key of the same project is another environment: refused too.
    const otherEnv = await client(stack, a.keys.test).post('/two-factor/verify', { pendingToken: ticket, code });
    expect(otherEnv.body.code).toBe('INVALID_CODE');
    expect((await c.post('/two-factor/verify', { pendingToken: ticket, code })).status).toBe(200);
    expect((await c.get('/two-factor')).body.code).toBe('SESSION_INVALID');
    expect((await c.post('/two-factor/totp/setup', {}, bearer('pgs_nope'))).body.code).toBe('SESSION_INVALID');
    // Bad input is a 400, never a 500.
    expect((await c.post('/two-factor/verify', { pendingToken: ticket })).status).toBe(400);
    expect((await c.post('/two-factor/verify', { pendingToken: ticket, code: 'x'.repeat(100) })).status).toBe(400);
    expect((await c.post('/two-factor/verify', { pendingToken: ticket, code, method: 'sms' })).status).toBe(400);
  });

  it('a ticket expires after 5 minutes (CODE_EXPIRED)', async () => {
    const c = api(a);
    const { secret } = await enrolled(c, 1007);
    const ticket = await held(c, 1007);
    offset += 5 * 60_000 + 1000;
    await setClock(stack, offset);
    await pin();
    const r = await c.post('/two-factor/verify', { pendingToken: ticket, code: codeAt(secret) });
    expect([r.status, r.body.code]).toEqual([400, 'CODE_EXPIRED']);
  });

  it('events: enabled, used (with its method), disabled and failed codes reach the audit log', async () => {
    const [enabled, used, disabled, failed] = await Promise.all([
      audit(a, 'two_factor.enabled'),
      audit(a, 'two_factor.used'),
      audit(a, 'two_factor.disabled'),
      audit(a, 'sign_in.failed'),
    ]);
    expect(enabled).toHaveLength(7);
    expect(used).toHaveLength(8);
    expect(disabled).toHaveLength(1);
    expect(used[0]).toMatchObject({
      provider: 'telegram',
      user_id: expect.any(String),
      session_id: expect.any(String),
      ip: expect.stringMatching(/^198\.51\.100\./),
      user_agent: 'two-factor-test/1',
    });
    expect(failed.map((e) => e.reason)).toEqual(expect.arrayContaining(['invalid_code', 'too_many_attempts', 'code_expired']));
    // No code, ticket or secret in any entry.
    expect(JSON.stringify([enabled, used, disabled, failed])).not.toMatch(/pgp_|pgs_|[A-Z2-7]{32}/);
  });
});

describe('two-factor, required', () => {
  it('a user with no factor enrols under the ticket, then signs in with it; removing it is refused', async () => {
    const p = await stack.createProject('tfa-req', 'Required');
    await provider(stack, p, 'telegram', { botToken: TEST_BOT });
    await mode(p, 'required');
    const c = api(p);
    const r = await signIn(c, 2001);
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ code: 'TWO_FACTOR_REQUIRED', enrol: true, methods: [] });
    const ticket = r.body.pendingToken;
    // No factor yet: verify is the wrong way in.
    expect((await c.post('/two-factor/verify', { pendingToken: ticket, code: '123456' })).body.code).toBe('INVALID_REQUEST');
    const setup = await c.post('/two-factor/enrol', { pendingToken: ticket });
    expect(setup.status).toBe(200);
    expect(setup.body.otpauthUri).toContain('issuer=Required');
    await pin();
    expect((await c.post('/two-factor/enrol/confirm', { pendingToken: ticket, code: codeAt(setup.body.secret, 4) })).body.code).toBe('INVALID_CODE');
    const done = await c.post('/two-factor/enrol/confirm', { pendingToken: ticket, code: codeAt(setup.body.secret) });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ token: expect.stringMatching(/^pgs_/), user: { provider: 'telegram' } });
    expect(done.body.backupCodes).toHaveLength(10);
    expect((await c.session(done.body.token)).status).toBe(200);
    // The ticket is spent.
    expect((await c.post('/two-factor/enrol', { pendingToken: ticket })).body.code).toBe('INVALID_CODE');

    const next = await signIn(c, 2001);
    expect(next.body).toMatchObject({ code: 'TWO_FACTOR_REQUIRED', enrol: false, methods: ['totp', 'backup_code'] });
    // An enrolled user's ticket does not enrol another app.
    expect((await c.post('/two-factor/enrol', { pendingToken: next.body.pendingToken })).body.code).toBe('INVALID_REQUEST');
    const v = await c.post('/two-factor/verify', { pendingToken: next.body.pendingToken, code: codeAt(setup.body.secret, 1) });
    expect(v.status).toBe(200);
    const off = await c.post('/two-factor/disable', { code: done.body.backupCodes[0] }, bearer(v.body.token));
    expect([off.status, off.body.code]).toEqual([400, 'INVALID_REQUEST']);
    expect((await c.get('/two-factor', bearer(v.body.token))).body).toMatchObject({ mode: 'required', totp: true, backupCodesLeft: 10 });
    expect(await audit(p, 'two_factor.enabled')).toHaveLength(1);
    expect(await audit(p, 'two_factor.used')).toHaveLength(1);
  });
});

describe('two-factor, off', () => {
  it('no gate: an enrolled user signs in at once, and the two-factor routes say it is not enabled', async () => {
    const p = await stack.createProject('tfa-off', 'Off');
    await provider(stack, p, 'telegram', { botToken: TEST_BOT });
    await mode(p, 'optional');
    const c = api(p);
    await enrolled(c, 3001);
    expect((await signIn(c, 3001)).status).toBe(401);
    await mode(p, 'off');
    const s = await signIn(c, 3001);
    expect(s.status).toBe(200);
    expect(s.body.token).toMatch(/^pgs_/);
    const st = await c.get('/two-factor', bearer(s.body.token));
    expect([st.status, st.body.code]).toEqual([400, 'PROVIDER_NOT_ENABLED']);
    expect((await c.post('/two-factor/totp/setup', {}, bearer(s.body.token))).body.code).toBe('PROVIDER_NOT_ENABLED');
  });
});

describe("the operator's reset", () => {
  it("removes a user's second factors (then the sign-in is not held); another project's slug or environment finds no user", async () => {
    const c = api(a);
    const { userId } = await enrolled(c, 4001);
    await held(c, 4001);
    const path = (p: Project, env = '') => `/admin/v1/projects/${p.slug}/auth/users/${userId}/two-factor${env}`;
    const token = fs.readFileSync(`${stack.dataDir}/admin-token`, 'utf8').trim();
    expect((await stack.adminApi('DELETE', path(b), token)).status).toBe(404);
    expect((await stack.adminApi('DELETE', path(a, '?env=test'), token)).status).toBe(404);
    expect((await stack.adminApi('DELETE', path(a), 'wrong-token')).status).toBe(401);
    expect(await stack.admin('DELETE', path(a))).toEqual({ removed: true });
    expect(await stack.admin('DELETE', path(a))).toEqual({ removed: false });
    expect((await signIn(c, 4001)).status).toBe(200);
    const reset = (await audit(a, 'two_factor.disabled')).filter((e) => e.user_id === userId);
    expect(reset).toMatchObject([{ reason: 'operator_reset' }]);
    const ops = (await stack.admin('GET', '/admin/v1/audit')) as { data: Array<{ action: string; target: string }> };
    expect(ops.data.find((e) => e.action === 'user.two_factor_reset')?.target).toBe(`project:${a.slug} user:${userId}`);
  });
});
