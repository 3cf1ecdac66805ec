// auth/two-factor/service.ts and its gate on a real store, in-process (the clock moved with setOffset):
// which sign-ins are held in each mode, the ±1 step window, a TOTP step never accepted twice nor an
// earlier one after a later one (two racers with one code: one session), a backup code once, the
// ticket's five tries, and what user management sees and resets (only its own project's users).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuthCrypto } from '../../auth/crypto.js';
import { AuthEvents } from '../../auth/events.js';
import { ProjectAuthConfig } from '../../auth/project-config.js';
import { isPending, scopeOf, Sessions, type OpenedSession, type PendingSignIn } from '../../auth/sessions.js';
import { twoFactorGate } from '../../auth/two-factor/gate.js';
import { TwoFactorService } from '../../auth/two-factor/service.js';
import { stepAt, totpAt } from '../../auth/two-factor/totp.js';
import type { SignInProfile } from '../../control/store/index.js';
import { RateLimiter } from '../../control/limits/rate-limit.js';
import { clock } from '../../core/clock.js';
import type { ApiError } from '../../core/errors.js';
import { localInvalidator } from '../../core/invalidation.js';
import { createLogger } from '../../core/log.js';
import { unitStore, type UnitStore } from '../helpers/unit-store.js';

const profile = (n: string): SignInProfile => ({
  provider: 'email',
  subject: `${n}@example.com`,
  email: `${n}@example.com`,
  emailVerified: true,
  name: null,
  avatarUrl: null,
  phone: null,
  username: null,
});
const origin = { ip: '203.0.113.9', userAgent: 'unit' };
const HOUR = 3_600_000;
/** Mid-step, far from any boundary. */
const T0 = 1_900_000_005_000;

let u: UnitStore;
let sessions: Sessions;
let svc: TwoFactorService;
let projects: ProjectAuthConfig;
const crypto = new AuthCrypto('t'.repeat(64));
const code = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: ApiError) => e.code,
  );
const at = (ms: number) => clock.setOffset(ms - Date.now());
const codeAt = (secret: string, k = 0) => totpAt(secret, stepAt(clock.now()) + k);

beforeEach(async () => {
  u = await unitStore();
  projects = new ProjectAuthConfig(u.store.signIn, crypto);
  const limiter = new RateLimiter();
  const events = new AuthEvents({ audit: u.store.audit, limiter, log: createLogger('test', 'silent') });
  sessions = new Sessions(u.store.signIn, localInvalidator(), events);
  svc = new TwoFactorService({ store: u.store.twoFactor, users: u.store.signIn, crypto, projects, sessions, events, limiter });
  sessions.addGate(twoFactorGate(svc));
  at(T0);
});
afterEach(async () => {
  clock.setOffset(0);
  await u.close();
});

const signIn = (n: string) => sessions.open(u.caller(), profile(n), origin, HOUR);
const opened = async (s: Promise<OpenedSession | PendingSignIn>) => {
  const r = await s;
  if (isPending(r)) throw new Error('held');
  return r;
};
const held = async (s: Promise<OpenedSession | PendingSignIn>) => {
  const r = await s;
  if (!isPending(r)) throw new Error('not held');
  return r;
};

/** Signs `n` in and turns TOTP on at the current step; its secret and backup codes. */
async function enrol(n: string): Promise<{ secret: string; backupCodes: string[]; user: OpenedSession['user'] }> {
  const s = await opened(signIn(n));
  const setup = await svc.totpSetup(s.user, 'Acme');
  const backupCodes = await svc.totpConfirm(scopeOf(u.caller()), s.user, s.session.id, codeAt(setup.secret), origin);
  return { secret: setup.secret, backupCodes, user: s.user };
}

describe('the gate', () => {
  it('off: nobody is held, even with a factor; optional: only users who enrolled; required: everyone, enrolling first', async () => {
    await projects.putSettings(u.project.id, { twoFactor: 'optional' });
    await opened(signIn('plain'));
    await enrol('ada');
    const p = await held(signIn('ada'));
    expect(p).toMatchObject({ pending: 'two_factor', methods: ['totp', 'backup_code'], enrol: false });
    expect(p.expiresAt - clock.now()).toBeGreaterThan(5 * 60_000 - 1000);
    expect(p.expiresAt - clock.now()).toBeLessThanOrEqual(5 * 60_000);
    expect(p.ticket).toMatch(/^pgp_[A-Za-z0-9_-]{43}$/);
    // The held session was revoked before anyone had its token; only the ticket's hash is stored.
    expect(await u.store.twoFactor.pending(p.ticket, u.project.id, 'live', clock.now())).toEqual({ status: 'missing' });

    await projects.putSettings(u.project.id, { twoFactor: 'off' });
    await opened(signIn('ada'));

    await projects.putSettings(u.project.id, { twoFactor: 'required' });
    expect(await held(signIn('plain'))).toMatchObject({ enrol: true, methods: [] });
    await held(signIn('ada'));
    // A sign-in that already gave a second factor passes.
    await opened(sessions.openFor(scopeOf(u.caller()), p.user.id, 'passkey', origin, HOUR, true));
  });
});

describe('codes', () => {
  beforeEach(() => projects.putSettings(u.project.id, { twoFactor: 'optional' }));
  const verify = (ticket: string, c: string, method?: 'totp' | 'backup_code') => svc.verify(scopeOf(u.caller()), ticket, c, method, origin);

  it('±1 step accepted, ±2 refused; after a step is used, it and every earlier one are refused', async () => {
    const { secret } = await enrol('ada');
    at(T0 + 60_000); // two steps after the confirming one
    const t1 = (await held(signIn('ada'))).ticket;
    expect(await code(verify(t1, codeAt(secret, -2)))).toBe('INVALID_CODE');
    expect(await code(verify(t1, codeAt(secret, 2)))).toBe('INVALID_CODE');
    expect(await code(verify(t1, codeAt(secret, -1)))).toBe('ok');
    const t2 = (await held(signIn('ada'))).ticket;
    expect(await code(verify(t2, codeAt(secret, -1)))).toBe('INVALID_CODE');
    expect(await code(verify(t2, codeAt(secret, 1)))).toBe('ok');
    const t3 = (await held(signIn('ada'))).ticket;
    expect(await code(verify(t3, codeAt(secret, 0)))).toBe('INVALID_CODE');
    // A minute on, the clock has caught up: a new step works.
    at(T0 + 120_000);
    expect(await code(verify(t3, codeAt(secret, 0)))).toBe('ok');
  });

  it('two sign-ins racing with the same code: one session', async () => {
    const { secret } = await enrol('ada');
    at(T0 + 30_000);
    const [a, b] = [(await held(signIn('ada'))).ticket, (await held(signIn('ada'))).ticket];
    const c = codeAt(secret);
    const results = await Promise.all([code(verify(a, c)), code(verify(b, c))]);
    expect(results.sort()).toEqual(['INVALID_CODE', 'ok']);
  });

  it('a backup code works once; five wrong codes end the ticket', async () => {
    const { secret, backupCodes } = await enrol('ada');
    const t1 = (await held(signIn('ada'))).ticket;
    expect(await code(verify(t1, backupCodes[0]!))).toBe('ok');
    const t2 = (await held(signIn('ada'))).ticket;
    expect(await code(verify(t2, backupCodes[0]!))).toBe('INVALID_CODE');
    for (let i = 0; i < 3; i++) expect(await code(verify(t2, 'zzzzz-zzzzz'))).toBe('INVALID_CODE');
    expect(await code(verify(t2, '000000', 'totp'))).toBe(codeAt(secret) === '000000' ? 'ok' : 'TOO_MANY_ATTEMPTS');
    expect(await code(verify(t2, backupCodes[1]!))).toBe('TOO_MANY_ATTEMPTS');
    expect(
      (await svc.status((await opened(sessions.openFor(scopeOf(u.caller()), (await held(signIn('ada'))).user.id, 'email', origin, HOUR, true))).user.id))
        .backupCodesLeft,
    ).toBe(9);
  });

  it('an expired ticket is CODE_EXPIRED', async () => {
    const { secret } = await enrol('ada');
    const t = (await held(signIn('ada'))).ticket;
    at(T0 + 5 * 60_000 + 1000);
    expect(await code(verify(t, codeAt(secret)))).toBe('CODE_EXPIRED');
  });
});

describe('for user management', () => {
  it("statusForUser and resetForUser see only the scope's own users", async () => {
    await projects.putSettings(u.project.id, { twoFactor: 'optional' });
    const { user } = await enrol('ada');
    const scope = scopeOf(u.caller());
    expect(await svc.statusForUser(scope, user.id)).toEqual({ totp: true, confirmedAt: expect.closeTo(T0, -4), backupCodesLeft: 10 });
    const other = await u.another('other');
    const foreign = scopeOf(u.caller('live', 'all', other));
    expect(await svc.statusForUser(foreign, user.id)).toEqual({ totp: false, confirmedAt: null, backupCodesLeft: 0 });
    expect(await svc.statusForUser({ ...scope, env: 'test' }, user.id)).toMatchObject({ totp: false });
    expect(await svc.resetForUser(foreign, user.id)).toBe(false);
    expect((await svc.statusForUser(scope, user.id)).totp).toBe(true);
    expect(await svc.resetForUser(scope, user.id)).toBe(true);
    expect(await svc.statusForUser(scope, user.id)).toEqual({ totp: false, confirmedAt: null, backupCodesLeft: 0 });
    expect(await svc.resetForUser(scope, user.id)).toBe(false);
    await opened(signIn('ada'));
    const log = await u.store.audit.list(u.project.id, { limit: 10, type: 'two_factor.disabled' });
    expect(log?.entries.map((e) => e.reason)).toEqual(['operator_reset']);
  });
});
