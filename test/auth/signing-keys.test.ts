// The JWT claims (lifetime capped at 10 minutes and by the session) and the signing key set on a real store:
// the first key made once, private halves sealed at rest, the signer chosen by time through a rotation, a
// rotation on one node heard by another through the invalidator, and tokens jose verifies with the JWKS.
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clock } from '../../core/clock.js';
import { createLogger } from '../../core/log.js';
import { tokenClaims } from '../../auth/jwt/claims.js';
import { OVERLAP_MS, PUBLISH_LEAD_MS, SigningKeys } from '../../auth/jwt/keys.js';
import { unitStore, type UnitStore } from '../helpers/unit-store.js';

const SECRET = 'x'.repeat(64);
const log = createLogger('test', 'silent');
const session = { id: 'ses-1', userId: 'usr-1', provider: 'google', env: 'live' as const, expiresAt: 0 };

describe('tokenClaims', () => {
  const base = { issuer: 'https://auth.example.com', audience: 'postgate:acme', project: { id: 'prj_acme', slug: 'acme' } };

  it("holds the session's user, project, session, provider and environment, and lives the project's lifetime", () => {
    const now = 1_700_000_000_123;
    const { claims, expiresAt } = tokenClaims({ ...base, ttlMs: 300_000, now, session: { ...session, expiresAt: now + 86_400_000 } });
    expect(claims).toEqual({
      iss: 'https://auth.example.com',
      sub: 'usr-1',
      aud: 'postgate:acme',
      project: 'acme',
      project_id: 'prj_acme',
      sid: 'ses-1',
      provider: 'google',
      env: 'live',
      iat: 1_700_000_000,
      nbf: 1_700_000_000,
      exp: 1_700_000_300,
      jti: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(expiresAt).toBe(1_700_000_300_000);
  });

  it('never lives past 10 minutes, nor past the session', () => {
    const now = 1_700_000_000_000;
    expect(tokenClaims({ ...base, ttlMs: 3_600_000, now, session: { ...session, expiresAt: now + 86_400_000 } }).claims.exp).toBe(1_700_000_600);
    const capped = tokenClaims({ ...base, ttlMs: 300_000, now, session: { ...session, expiresAt: now + 42_500 } });
    expect(capped.claims.exp).toBe(1_700_000_042);
    expect(capped.expiresAt).toBeLessThanOrEqual(now + 42_500);
  });
});

describe('SigningKeys', () => {
  let u: UnitStore;
  beforeAll(async () => {
    u = await unitStore('keys');
  });
  afterAll(() => u.close());
  afterEach(() => clock.setOffset(0));

  const claims = () =>
    tokenClaims({
      issuer: 'iss',
      audience: 'aud',
      ttlMs: 300_000,
      now: clock.now(),
      project: { id: 'p', slug: 'p' },
      session: { ...session, expiresAt: clock.now() + 3_600_000 },
    }).claims;
  /** Verified with the keys `keys` publishes now, as at `at` (a token's own time: the clock may have moved past its exp). */
  const verify = async (keys: SigningKeys, token: string, at = clock.date()) =>
    (await jwtVerify(token, createLocalJWKSet(await keys.jwks()), { issuer: 'iss', audience: 'aud', currentDate: at, algorithms: ['ES256'] })).protectedHeader
      .kid;

  it('makes the first key once, seals its private half, and signs tokens jose verifies with the JWKS', async () => {
    const one = new SigningKeys(u.store.signingKeys, SECRET, u.invalidator, log);
    const two = new SigningKeys(u.store.signingKeys, SECRET, u.invalidator, log);
    await Promise.all([one.start(), two.start()]);
    const rows = await u.store.signingKeys.list();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.privateJwk).toMatch(/^v1\./);
    expect(rows[0]!.privateJwk).not.toContain('"d"');
    expect(JSON.parse(rows[0]!.publicJwk)).not.toHaveProperty('d');
    const jwks = await one.jwks();
    expect(jwks.keys).toEqual([{ kty: 'EC', crv: 'P-256', x: expect.any(String), y: expect.any(String), kid: rows[0]!.kid, alg: 'ES256', use: 'sig' }]);
    const token = await one.sign(claims());
    expect(await verify(two, token)).toBe(rows[0]!.kid);
    // Another secret cannot open the key.
    const wrong = new SigningKeys(u.store.signingKeys, 'y'.repeat(64), u.invalidator, log);
    await expect(wrong.jwks()).rejects.toThrow();
    one.stop();
    two.stop();
  });

  it('rotates with overlap: published first, signing after the lead, the old key dropped after the overlap; the other node follows', async () => {
    const a = new SigningKeys(u.store.signingKeys, SECRET, u.invalidator, log);
    const b = new SigningKeys(u.store.signingKeys, SECRET, u.invalidator, log);
    await Promise.all([a.start(), b.start()]);
    const oldKid = decodeProtectedHeader(await b.sign(claims())).kid;
    const next = await a.rotate();
    expect(next.state).toBe('next');
    // b heard of it: both published there, b still signs with the old key.
    await expect.poll(async () => (await b.jwks()).keys.map((k) => k.kid)).toEqual([oldKid, next.kid]);
    const oldAt = clock.date();
    const old = await b.sign(claims());
    expect(decodeProtectedHeader(old).kid).toBe(oldKid);

    clock.setOffset(PUBLISH_LEAD_MS);
    expect(decodeProtectedHeader(await b.sign(claims())).kid).toBe(next.kid);
    expect(await verify(b, old, oldAt)).toBe(oldKid);
    expect((await a.list()).map((k) => k.state)).toEqual(['retired', 'signing']);

    clock.setOffset(PUBLISH_LEAD_MS + OVERLAP_MS);
    expect((await b.jwks()).keys.map((k) => k.kid)).toEqual([next.kid]);
    expect((await a.list())[0]!.state).toBe('dropped');
    a.stop();
    b.stop();
  });

  it('rotates automatically when the newest key is older than the period: once for several nodes', async () => {
    const day = 86_400_000;
    const a = new SigningKeys(u.store.signingKeys, SECRET, u.invalidator, log, 30 * day);
    const b = new SigningKeys(u.store.signingKeys, SECRET, u.invalidator, log, 30 * day);
    await Promise.all([a.start(), b.start()]);
    const before = await a.list();
    await Promise.all([a.maintain(), b.maintain()]);
    expect(await a.list()).toEqual(before);
    clock.setOffset(31 * day);
    await Promise.all([a.maintain(), b.maintain()]);
    const after = await b.list();
    const added = after.filter((k) => !before.some((o) => o.kid === k.kid));
    expect(added).toHaveLength(1);
    expect(added[0]!.state).toBe('next');
    expect(Date.parse(added[0]!.activeFrom) - Date.parse(added[0]!.createdAt)).toBe(PUBLISH_LEAD_MS);
    // Keys dropped long ago were deleted by the same pass.
    expect(after.some((k) => k.state === 'dropped')).toBe(false);
    a.stop();
    b.stop();
  });

  it('the overlap outlasts the longest token', () => {
    expect(OVERLAP_MS).toBeGreaterThan(600_000);
    expect(PUBLISH_LEAD_MS).toBeGreaterThan(300_000);
  });
});
