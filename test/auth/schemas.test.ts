// auth/schemas.ts: what the auth API accepts and answers. The browser binding's formats accept what
// the SDK and the server make and refuse anything else; a user as the API shows it.
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { challengeOf } from '../../auth/browser-binding.js';
import { codeChallenge, codeVerifier, schemas, sessionOut, sessionUserOut, userOut } from '../../auth/schemas.js';
import { createCodeVerifier } from '../../auth/sdk/src/binding.js';
import type { UserRow } from '../../control/store/index.js';

const ajv = new Ajv({ strict: false });

describe('the browser binding’s formats', () => {
  const challengeOk = ajv.compile(codeChallenge);
  const verifierOk = ajv.compile(codeVerifier);

  it('accept what the SDK and the server make', () => {
    for (let i = 0; i < 50; i++) {
      const v = createCodeVerifier();
      expect(verifierOk(v), v).toBe(true);
      expect(challengeOk(challengeOf(v)), v).toBe(true);
    }
    expect(verifierOk('a.b~c_d-'.padEnd(128, 'x'))).toBe(true);
  });

  it('refuse anything else: wrong lengths, other characters, a plain (non-S256) challenge', () => {
    for (const bad of ['', 'x'.repeat(42), 'x'.repeat(44), `${'x'.repeat(42)}=`, `${'x'.repeat(42)}+`]) expect(challengeOk(bad), bad).toBe(false);
    for (const bad of ['x'.repeat(42), 'x'.repeat(129), `${'x'.repeat(42)} `, `${'x'.repeat(42)}/`]) expect(verifierOk(bad), bad).toBe(false);
  });
});

it('request bodies refuse fields they do not know', () => {
  const social = ajv.compile(schemas.social.body);
  expect(social({ provider: 'google', callbackURL: 'https://app.example.com/cb' })).toBe(true);
  expect(social({ provider: 'google', callbackURL: 'https://app.example.com/cb', admin: true })).toBe(false);
  expect(social({ provider: 'google' })).toBe(false);
});

describe('output', () => {
  const user: UserRow = {
    id: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
    projectId: 'p',
    env: 'live',
    email: 'a@example.com',
    emailVerified: true,
    name: 'Ada',
    avatarUrl: null,
    phone: null,
    username: 'ada',
    provider: 'google',
    createdAt: Date.parse('2026-03-01T10:00:00Z'),
    lastSignIn: null,
  };

  it('a user: ISO times, lastSignIn only once there was one, never the project or environment', () => {
    const out = userOut(user);
    expect(out).toEqual({
      id: user.id,
      email: 'a@example.com',
      emailVerified: true,
      name: 'Ada',
      avatarUrl: null,
      phone: null,
      username: 'ada',
      provider: 'google',
      createdAt: '2026-03-01T10:00:00.000Z',
    });
    expect(userOut({ ...user, lastSignIn: Date.parse('2026-03-02T00:00:00Z') }, 'email')).toMatchObject({
      provider: 'email',
      lastSignIn: '2026-03-02T00:00:00.000Z',
    });
    expect(sessionUserOut(user, 'email')).not.toHaveProperty('projectId');
    expect(
      sessionOut({ id: 's', projectId: 'p', env: 'live', userId: 'u', provider: 'email', ip: null, userAgent: null, createdAt: 0, expiresAt: 86_400_000 }),
    ).toEqual({
      id: 's',
      expiresAt: '1970-01-02T00:00:00.000Z',
    });
  });
});
