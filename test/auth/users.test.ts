// User management's service and ban gate (auth/users) on a real store: a ban ends the user's sessions at
// once (the cache too) and refuses every sign-in path with USER_BANNED until it ends (the clock moved past
// its end lets sign-in back) or is lifted; deletion ends sessions, removes the user and keeps a user.deleted
// entry without personal data; foreign ids answer NOT_FOUND; the metadata limit.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuthEvents } from '../../auth/events.js';
import { isPending, scopeOf, Sessions, type OpenedSession, type PendingSignIn } from '../../auth/sessions.js';
import { METADATA_MAX_BYTES, UserManagement } from '../../auth/users/service.js';
import { AUTH_KEYS } from '../../auth/routes.js';
import { USER_KEYS } from '../../auth/users/routes.js';
import { KeyAuthenticator, MAIL_KEYS } from '../../control/api-keys/authenticate.js';
import { newApiKey } from '../../control/api-keys/issue.js';
import { RateLimiter } from '../../control/limits/rate-limit.js';
import type { SignInProfile } from '../../control/store/index.js';
import { clock } from '../../core/clock.js';
import { ApiError } from '../../core/errors.js';
import { createLogger } from '../../core/log.js';
import { sha256 } from '../../auth/crypto.js';
import { unitStore, type UnitStore } from '../helpers/unit-store.js';

const HOUR = 3_600_000;
const origin = { ip: '203.0.113.5', userAgent: 'agent' };
const ada: SignInProfile = {
  provider: 'email',
  subject: 'ada@example.com',
  email: 'ada@example.com',
  emailVerified: true,
  name: 'Ada',
  avatarUrl: null,
  phone: null,
  username: null,
};

let u: UnitStore;
let sessions: Sessions;
let users: UserManagement;

async function opened(s: Promise<OpenedSession | PendingSignIn>): Promise<OpenedSession> {
  const r = await s;
  if (isPending(r)) throw new Error('held for a second factor');
  return r;
}
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: ApiError) => (e instanceof ApiError ? e.code : String(e)),
  );
const audit = async () => (await u.store.audit.list(u.project.id, { limit: 100 }))!.entries;

beforeEach(async () => {
  u = await unitStore();
  const events = new AuthEvents({ audit: u.store.audit, limiter: new RateLimiter(), log: createLogger('test', 'silent') });
  sessions = new Sessions(u.store.signIn, u.invalidator, events);
  users = new UserManagement({ store: u.store.users, sessions, events });
  sessions.addGate(users.gate);
});

afterEach(async () => {
  clock.setOffset(0);
  await u.close();
});

describe('a ban', () => {
  it("ends the user's sessions at once and refuses every sign-in path with USER_BANNED", async () => {
    const caller = u.caller();
    const scope = scopeOf(caller);
    const first = await opened(sessions.open(caller, ada, origin, HOUR));
    const second = await opened(sessions.open(caller, ada, origin, HOUR));
    // Both cached: the check answers from memory.
    await sessions.check(caller, first.token);
    await sessions.check(caller, second.token);
    const m = await users.ban(scope, first.user.id, 'fraud', null);
    expect(m.ban).toMatchObject({ reason: 'fraud', expiresAt: null });
    expect(await refusal(sessions.check(caller, first.token))).toBe('SESSION_INVALID');
    expect(await refusal(sessions.check(caller, second.token))).toBe('SESSION_INVALID');
    expect(await users.sessions(scope, first.user.id)).toEqual([]);

    const err = await sessions.open(caller, ada, origin, HOUR).catch((e: ApiError) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('USER_BANNED');
    expect((err as ApiError).message).toBe('This account is banned');
    // The refused session was revoked before anyone had its token.
    expect(await users.sessions(scope, first.user.id)).toEqual([]);
    expect(await refusal(sessions.openFor(scope, first.user.id, 'passkey', origin, HOUR, true))).toBe('USER_BANNED');
    // OAuth: the user is resolved at the callback, the session opened at the exchange: the gate refuses there.
    const code = await sessions.openLater(scope, ada, origin, null);
    expect(await refusal(sessions.exchange(caller, code, HOUR, { required: false }))).toBe('USER_BANNED');

    const types = (await audit()).map((e) => `${e.type}:${e.reason ?? ''}`);
    expect(types.filter((t) => t === 'session.revoked:user_banned')).toHaveLength(2);
    expect(types).toContain('user.banned:fraud');

    await users.unban(scope, first.user.id);
    expect((await audit()).map((e) => e.type)).toContain('user.unbanned');
    await opened(sessions.open(caller, ada, origin, HOUR));
  });

  it('with an end lets sign-in back once the clock passes it; an ended ban is cleared without user.unbanned', async () => {
    const caller = u.caller();
    const scope = scopeOf(caller);
    const { user } = await opened(sessions.open(caller, ada, origin, HOUR));
    const until = clock.now() + 2 * HOUR;
    await users.ban(scope, user.id, 'cooling off', until);
    const err = (await sessions.open(caller, ada, origin, HOUR).catch((e: ApiError) => e)) as ApiError;
    expect(err.code).toBe('USER_BANNED');
    expect(err.message).toBe(`This account is banned until ${new Date(until).toISOString()}`);
    expect(err.extra).toEqual({ bannedUntil: new Date(until).toISOString() });
    clock.setOffset(2 * HOUR - 60_000);
    expect(await refusal(sessions.open(caller, ada, origin, HOUR))).toBe('USER_BANNED');
    clock.setOffset(2 * HOUR + 1000);
    await opened(sessions.open(caller, ada, origin, HOUR));
    expect((await users.get(scope, user.id)).ban).toMatchObject({ reason: 'cooling off' });
    await users.unban(scope, user.id);
    expect((await audit()).map((e) => e.type)).not.toContain('user.unbanned');
  });

  it('refuses an end in the past, and acts only on the caller’s project and environment', async () => {
    const caller = u.caller();
    const { user } = await opened(sessions.open(caller, ada, origin, HOUR));
    expect(await refusal(users.ban(scopeOf(caller), user.id, 'x', clock.now() - 1))).toBe('INVALID_REQUEST');
    const b = await u.another('beta');
    for (const scope of [scopeOf(u.caller('live', 'users', b)), scopeOf(u.caller('test', 'users'))]) {
      expect(await refusal(users.ban(scope, user.id, 'x', null))).toBe('NOT_FOUND');
      expect(await refusal(users.get(scope, user.id))).toBe('NOT_FOUND');
      expect(await refusal(users.delete(scope, user.id))).toBe('NOT_FOUND');
      expect(await refusal(users.update(scope, user.id, { name: 'M' }))).toBe('NOT_FOUND');
      expect(await refusal(users.revokeSessions(scope, user.id))).toBe('NOT_FOUND');
    }
    await opened(sessions.open(caller, ada, origin, HOUR));
  });
});

describe('deleting a user', () => {
  it('ends its sessions (cached ones too), removes it and keeps user.deleted without personal data', async () => {
    const caller = u.caller();
    const scope = scopeOf(caller);
    const s = await opened(sessions.open(caller, { ...ada, phone: '+15550003' }, origin, HOUR));
    await sessions.check(caller, s.token);
    await users.delete(scope, s.user.id);
    expect(await refusal(sessions.check(caller, s.token))).toBe('SESSION_INVALID');
    expect(await u.store.signIn.sessionByHash(sha256(s.token))).toBeUndefined();
    expect(await refusal(users.get(scope, s.user.id))).toBe('NOT_FOUND');
    const mine = (await audit()).filter((e) => e.userId === s.user.id);
    expect(mine.map((e) => e.type)).toEqual(['user.deleted', 'session.revoked', 'session.created', 'user.created']);
    for (const e of mine) expect(e).toMatchObject({ email: null, phone: null, ip: null, userAgent: null });
    const again = await opened(sessions.open(caller, ada, origin, HOUR));
    expect(again.user.id).not.toBe(s.user.id);
  });
});

describe('updates and sessions', () => {
  it('limits metadata to 16 kB of JSON, drops cached copies of the user, and ends one session of the user only', async () => {
    const caller = u.caller();
    const scope = scopeOf(caller);
    const s = await opened(sessions.open(caller, ada, origin, HOUR));
    const other = await opened(sessions.open(caller, { ...ada, subject: 'bob@example.com', email: 'bob@example.com', name: 'Bob' }, origin, HOUR));
    await sessions.check(caller, s.token);
    const fits = { v: 'x'.repeat(METADATA_MAX_BYTES - 8) };
    expect(JSON.stringify(fits).length).toBe(METADATA_MAX_BYTES);
    expect((await users.update(scope, s.user.id, { metadata: fits, name: 'Ada L.' })).metadata).toEqual(fits);
    expect((await sessions.check(caller, s.token)).user.name).toBe('Ada L.');
    expect(await refusal(users.update(scope, s.user.id, { metadata: { v: 'x'.repeat(METADATA_MAX_BYTES) } }))).toBe('INVALID_REQUEST');
    expect(await refusal(users.update(scope, s.user.id, { phoneVerified: true }))).toBe('INVALID_REQUEST');
    // Bob's session is not Ada's to end.
    expect(await refusal(users.revokeSession(scope, s.user.id, other.session.id))).toBe('NOT_FOUND');
    await sessions.check(caller, other.token);
    await users.revokeSession(scope, s.user.id, s.session.id);
    expect(await refusal(sessions.check(caller, s.token))).toBe('SESSION_INVALID');
    expect(await refusal(users.revokeSession(scope, s.user.id, s.session.id))).toBe('NOT_FOUND');
    expect((await audit()).find((e) => e.type === 'session.revoked')).toMatchObject({ reason: 'admin', sessionId: s.session.id });
    expect((await audit()).find((e) => e.type === 'user.updated')).toMatchObject({ userId: s.user.id });
  });
});

describe('the users key scope', () => {
  it('admits users and all keys of either kind to user management, and a users key to nothing else', async () => {
    const access = new KeyAuthenticator(u.store, u.invalidator);
    const key = async (kind: 'live' | 'test', scope: 'all' | 'auth' | 'users') => {
      const k = newApiKey(u.project.id, kind, scope, 1);
      await u.store.apiKeys.create(k.row);
      return k.plain;
    };
    const answer = (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (e: ApiError) => `${e.code}: ${e.message}`,
      );
    for (const kind of ['live', 'test'] as const) {
      const users = await key(kind, 'users');
      expect(await answer(access.resolve(users, USER_KEYS))).toBe('ok');
      expect(await answer(access.resolve(await key(kind, 'all'), USER_KEYS))).toBe('ok');
      expect(await answer(access.resolve(users, AUTH_KEYS))).toBe(`INVALID_API_KEY: This ${kind} key (users scope) cannot call this API`);
      expect(await answer(access.resolve(users, MAIL_KEYS))).toBe(`INVALID_API_KEY: This ${kind} key (users scope) cannot call this API`);
      expect(await answer(access.resolve(await key(kind, 'auth'), USER_KEYS))).toBe(`INVALID_API_KEY: This ${kind} key (auth scope) cannot call this API`);
    }
  });
});
