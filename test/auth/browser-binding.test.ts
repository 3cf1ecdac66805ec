// auth/browser-binding.ts: PKCE's S256 and the rule that decides whether a code may be exchanged
// by a caller presenting (or not) a verifier (login CSRF, RFC 9700 §4.7).
import nodeCrypto from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bindingCheck, challengeOf } from '../../auth/browser-binding.js';

afterEach(() => vi.restoreAllMocks());

it('challengeOf is S256 as RFC 7636 appendix B computes it', () => {
  expect(challengeOf('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
});

describe('bindingCheck', () => {
  const verifier = 'v'.repeat(43);
  const challenge = challengeOf(verifier);

  it('a bound code needs the verifier of its challenge', () => {
    expect(bindingCheck(verifier, false)(challenge)).toBe(true);
    expect(bindingCheck(verifier, true)(challenge)).toBe(true);
    expect(bindingCheck('w'.repeat(43), false)(challenge)).toBe(false);
    expect(bindingCheck(undefined, false)(challenge)).toBe(false);
    // The challenge itself is not a verifier.
    expect(bindingCheck(challenge, false)(challenge)).toBe(false);
  });

  it('an unbound code: exchanged without a verifier unless the project requires binding; never with one', () => {
    expect(bindingCheck(undefined, false)(null)).toBe(true);
    expect(bindingCheck(undefined, true)(null)).toBe(false);
    // A caller with a verifier expects a code its browser started: one without a challenge came from elsewhere.
    expect(bindingCheck(verifier, false)(null)).toBe(false);
  });

  it('compares the challenge in constant time', () => {
    const spy = vi.spyOn(nodeCrypto, 'timingSafeEqual');
    bindingCheck('w'.repeat(43), false)(challenge);
    expect(spy).toHaveBeenCalled();
  });
});
