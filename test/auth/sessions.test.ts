// auth/sessions.ts on a real store: opaque tokens kept as SHA-256 only, valid for their own project
// and key kind until they expire, answered from memory and dropped everywhere at sign-out; the
// one-time svc_code of an OAuth sign-in, whose second use revokes its session, and its browser binding.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { challengeOf } from '../../auth/browser-binding.js';
import { sha256 } from '../../auth/crypto.js';
import { settings } from '../../auth/settings.js';
import { isPending, scopeOf, Sessions, type OpenedSession, type PendingSignIn } from '../../auth/sessions.js';
import type { SignInProfile } from '../../control/store/index.js';
import { clock } from '../../core/clock.js';
import { ApiError } from '../../core/errors.js';
import { localInvalidator, type Invalidator } from '../../core/invalidation.js';
import { unitStore, type UnitStore } from '../helpers/unit-store.js';

/** These sign-ins pass every gate (none is added here): a pending one would be a bug. */
async function opened(s: Promise<OpenedSession | PendingSignIn>): Promise<OpenedSession> {
  const r = await s;
  if (isPending(r)) throw new Error('sign-in held for a second factor');
  return r;
}

const profile: SignInProfile = {
  provider: 'email',
  subject: 'ada@example.com',
  email: 'ada@example.com',
  emailVerified: true,
  name: 'Ada',
  avatarUrl: null,
  phone: null,
  username: null,
};
const origin = { ip: '203.0.113.5', userAgent: 'agent' };
const HOUR = 3_600_000;

let u: UnitStore;
let bus: Invalidator;
let sessions: Sessions;
const failure = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: ApiError) => e.code,
  );

beforeEach(async () => {
  u = await unitStore();
  bus = localInvalidator();
  sessions = new Sessions(u.store.signIn, bus);
});

afterEach(async () => {
  clock.setOffset(0);
  await u.close();
});

describe('tokens', () => {
  it('a session token is 256 random bits with a prefix, and the store knows only its SHA-256', async () => {
    const { token, user, session } = await opened(sessions.open(u.caller(), profile, origin, HOUR));
    expect(token).toMatch(/^pgs_[A-Za-z0-9_-]{43}$/);
    expect(user).toMatchObject({ email: 'ada@example.com', projectId: u.project.id, env: 'live' });
    expect(session.expiresAt - session.createdAt).toBe(HOUR);
    expect(await u.store.signIn.sessionByHash(sha256(token))).toMatchObject({ id: session.id });
    expect(await u.store.signIn.sessionByHash(token)).toBeUndefined();
    expect((await sessions.check(u.caller(), token)).user.id).toBe(user.id);
  });

  it('work only for their own project and key kind', async () => {
    const { token } = await opened(sessions.open(u.caller(), profile, origin, HOUR));
    const other = await u.another('other');
    expect(await failure(sessions.check(u.caller('live', 'all', other), token))).toBe('SESSION_INVALID');
    expect(await failure(sessions.check(u.caller('test'), token))).toBe('SESSION_INVALID');
    // A browser-safe key of the same project and kind is the same caller for sessions.
    expect(await failure(sessions.check(u.caller('live', 'auth'), token))).toBe('ok');
    expect(sessions.cached(u.caller('live', 'all', other), token)).toBeUndefined();
  });

  it('expire, from memory too', async () => {
    const { token } = await opened(sessions.open(u.caller(), profile, origin, HOUR));
    await sessions.check(u.caller(), token);
    expect(sessions.cached(u.caller(), token)).toBeDefined();
    clock.setOffset(HOUR + 1);
    expect(sessions.cached(u.caller(), token)).toBeUndefined();
    expect(await failure(sessions.check(u.caller(), token))).toBe('SESSION_INVALID');
  });

  it('a missing, unknown or oversized token is invalid without a lookup', async () => {
    for (const t of [undefined, '', 'pgs_unknown', 'x'.repeat(201)]) expect(await failure(sessions.check(u.caller(), t)), String(t)).toBe('SESSION_INVALID');
    expect(sessions.cached(u.caller(), 'x'.repeat(201))).toBeUndefined();
  });

  it('the user agent is kept to 512 characters', async () => {
    const { session } = await opened(sessions.open(u.caller(), profile, { ip: null, userAgent: 'a'.repeat(2000) }, HOUR));
    expect(session.userAgent).toHaveLength(512);
  });
});

describe('sign-out', () => {
  it('is seen at once by every Sessions on the bus, though they had the session in memory', async () => {
    const other = new Sessions(u.store.signIn, bus);
    const { token } = await opened(sessions.open(u.caller(), profile, origin, HOUR));
    await other.check(u.caller(), token);
    expect(other.cached(u.caller(), token)).toBeDefined();
    await sessions.signOut(u.caller(), token);
    expect(other.cached(u.caller(), token)).toBeUndefined();
    expect(await failure(other.check(u.caller(), token))).toBe('SESSION_INVALID');
    expect(await failure(sessions.signOut(u.caller(), token))).toBe('SESSION_INVALID');
  });

  it('a node that may have missed invalidations trusts nothing it holds', async () => {
    let reset = () => {};
    const watched: Invalidator = { ...localInvalidator(), onReset: (fn) => void (reset = fn) };
    const s = new Sessions(u.store.signIn, watched);
    const { token } = await opened(s.open(u.caller(), profile, origin, HOUR));
    await s.check(u.caller(), token);
    expect(s.cached(u.caller(), token)).toBeDefined();
    reset();
    expect(s.cached(u.caller(), token)).toBeUndefined();
    // The store still knows it.
    expect(await failure(s.check(u.caller(), token))).toBe('ok');
  });
});

describe('svc_code exchange', () => {
  const later = (challenge: string | null = null) => sessions.openLater(scopeOf(u.caller()), profile, origin, challenge);

  it('opens a session once; a second use revokes it (the code leaked)', async () => {
    const code = await later();
    const first = await opened(sessions.exchange(u.caller(), code, HOUR, { required: false }));
    expect((await sessions.check(u.caller(), first.token)).session.id).toBe(first.session.id);
    expect(await failure(sessions.exchange(u.caller(), code, HOUR, { required: false }))).toBe('INVALID_CODE');
    expect(await failure(sessions.check(u.caller(), first.token))).toBe('SESSION_INVALID');
  });

  it('is kept as a hash, lasts a minute, and belongs to its project and environment', async () => {
    const code = await later();
    const other = await u.another('other');
    expect(await failure(sessions.exchange(u.caller('live', 'all', other), code, HOUR, { required: false }))).toBe('INVALID_CODE');
    expect(await failure(sessions.exchange(u.caller('test'), code, HOUR, { required: false }))).toBe('INVALID_CODE');
    expect(await failure(sessions.exchange(u.caller(), 'not-a-code', HOUR, { required: false }))).toBe('INVALID_CODE');
    clock.setOffset(settings.exchangeCodeTtlMs + 1);
    expect(await failure(sessions.exchange(u.caller(), code, HOUR, { required: false }))).toBe('CODE_EXPIRED');
  });

  it('a code bound to a browser needs that browser’s verifier', async () => {
    const verifier = 'v'.repeat(43);
    const code = await later(challengeOf(verifier));
    const without = await sessions.exchange(u.caller(), code, HOUR, { required: false }).catch((e: ApiError) => e);
    expect(without).toMatchObject({ code: 'INVALID_CODE', message: expect.stringMatching(/codeVerifier of the browser that started it/) });
    const another = await sessions.exchange(u.caller(), code, HOUR, { verifier: 'w'.repeat(43), required: false }).catch((e: ApiError) => e);
    expect(another).toMatchObject({ code: 'INVALID_CODE', message: expect.stringMatching(/started in another browser/) });
    // Refused attempts did not use the code up.
    const ok = await opened(sessions.exchange(u.caller(), code, HOUR, { verifier, required: false }));
    expect(ok.token).toMatch(/^pgs_/);
  });

  it('an unbound code is refused where the project requires binding', async () => {
    const code = await later();
    expect(await failure(sessions.exchange(u.caller(), code, HOUR, { required: true }))).toBe('INVALID_CODE');
  });
});

describe('gates', () => {
  const held = (user: PendingSignIn['user']): PendingSignIn => ({
    pending: 'two_factor',
    user,
    ticket: 'pgp_x',
    methods: ['totp'],
    enrol: false,
    expiresAt: 1,
  });

  it('a gate that refuses: the error reaches the caller and the session it would have had is revoked', async () => {
    let seen: string | undefined;
    sessions.addGate({
      admit: async (a) => {
        seen = a.session.id;
        throw new ApiError('INVALID_CREDENTIAL', 'refused by the gate');
      },
    });
    expect(await failure(sessions.open(u.caller(), profile, origin, HOUR))).toBe('INVALID_CREDENTIAL');
    const row = (await u.store.signIn.revokeSessionById(seen!, clock.now())) ?? null;
    expect(row).toBeNull(); // already revoked by the gate's refusal
  });

  it('a gate that holds: a pending sign-in instead of a session, for a token sign-in, an exchange and openFor', async () => {
    const ids: string[] = [];
    sessions.addGate({
      admit: async (a) => {
        ids.push(a.session.id);
        return a.secondFactor ? undefined : held(a.user);
      },
    });
    const p = await sessions.open(u.caller(), profile, origin, HOUR);
    expect(isPending(p)).toBe(true);
    const code = await sessions.openLater(scopeOf(u.caller()), profile, origin, null);
    expect(isPending(await sessions.exchange(u.caller(), code, HOUR, { required: false }))).toBe(true);
    for (const id of ids) expect(await u.store.signIn.revokeSessionById(id, clock.now())).toBeUndefined();
    // The second factor given: openFor lets it through, and its token works.
    const s = await opened(sessions.openFor(scopeOf(u.caller()), (p as PendingSignIn).user.id, 'email', origin, HOUR, true));
    expect((await sessions.check(u.caller(), s.token)).user.id).toBe((p as PendingSignIn).user.id);
  });

  it("openFor refuses another project's or environment's user", async () => {
    const s = await opened(sessions.open(u.caller(), profile, origin, HOUR));
    const other = await u.another('other');
    expect(await failure(sessions.openFor(scopeOf(u.caller('live', 'all', other)), s.user.id, 'passkey', origin, HOUR, false))).toBe('SESSION_INVALID');
    expect(await failure(sessions.openFor(scopeOf(u.caller('test')), s.user.id, 'passkey', origin, HOUR, false))).toBe('SESSION_INVALID');
  });

  it('revokeById ends a session everywhere at once', async () => {
    const s = await opened(sessions.open(u.caller(), profile, origin, HOUR));
    await sessions.check(u.caller(), s.token);
    expect(await sessions.revokeById(scopeOf(u.caller()), { sessionId: s.session.id, userId: s.user.id }, 'admin')).toBe(true);
    expect(await failure(sessions.check(u.caller(), s.token))).toBe('SESSION_INVALID');
    expect(await sessions.revokeById(scopeOf(u.caller()), { sessionId: s.session.id, userId: s.user.id }, 'admin')).toBe(false);
  });
});
