// Login CSRF defence (RFC 9700 §4.7): a sign-in that ends in an svc_code is bound to
// the browser that started it. That browser (the SDK, the embed script) keeps a random
// verifier in sessionStorage and sends its S256 hash, the challenge, with the start;
// exchange-code must then present the verifier. An attacker's code sent to a victim
// fails: the victim's browser holds another verifier, or none. Works without cookies.
import crypto from 'node:crypto';
import { safeEqual } from '../core/crypto.js';

/** PKCE's S256 (RFC 7636 §4.2): base64url(SHA-256(verifier)). */
export const challengeOf = (verifier: string): string => crypto.createHash('sha256').update(verifier).digest('base64url');

/**
 * Whether a code stored with `stored` (its challenge, or null) may be exchanged by a caller
 * presenting `verifier`. A challenge needs its verifier; a caller that brings a verifier
 * expects a bound code (a code without one was started elsewhere); a project may require binding.
 */
export function bindingCheck(verifier: string | undefined, required: boolean): (stored: string | null) => boolean {
  const presented = verifier === undefined ? null : challengeOf(verifier);
  return (stored) => (stored !== null ? presented !== null && safeEqual(stored, presented) : presented === null && !required);
}

/** The app's callback `url` with `param` set and any stale `svc_code` or `error` removed: where a sign-in lands. */
export function returnWith(url: URL | string, param: 'svc_code' | 'error', value: string): string {
  const u = new URL(url);
  u.searchParams.delete('svc_code');
  u.searchParams.delete('error');
  u.searchParams.set(param, value);
  return u.toString();
}

/** `url` with the sign-in's one-time `svc_code`. */
export const withCode = (url: URL | string, code: string): string => returnWith(url, 'svc_code', code);
