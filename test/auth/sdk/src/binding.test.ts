// auth/sdk/src/binding.ts, the browser half of the login CSRF defence: a verifier of RFC 7636's
// form whose challenge is exactly what the server computes (auth/browser-binding.ts).
import { afterEach, expect, it } from 'vitest';
import { challengeOf } from '../../../../auth/browser-binding.js';
import { clearVerifier, codeChallengeOf, createCodeVerifier, pendingChallenge, readVerifier } from '../../../../auth/sdk/src/binding.js';

afterEach(() => clearVerifier());

it('a verifier is 32 random bytes in base64url: 43 characters, never twice the same', () => {
  const v = createCodeVerifier();
  expect(v).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(new Set(Array.from({ length: 200 }, createCodeVerifier)).size).toBe(200);
});

it('its challenge is the one the server computes, for any verifier', async () => {
  for (const v of [createCodeVerifier(), 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk', 'x'.repeat(128)]) expect(await codeChallengeOf(v)).toBe(challengeOf(v));
});

it('without sessionStorage (Node, a sandboxed frame) the pending verifier lives in memory until cleared', async () => {
  expect(readVerifier()).toBeNull();
  const challenge = await pendingChallenge();
  const v = readVerifier()!;
  expect(challenge).toBe(challengeOf(v));
  // A second start in the same tab keeps the same verifier.
  expect(await pendingChallenge()).toBe(challenge);
  clearVerifier();
  expect(readVerifier()).toBeNull();
});
