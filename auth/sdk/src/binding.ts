// The browser half of the login CSRF defence (auth/browser-binding.ts on the server): a random
// verifier kept in this tab's sessionStorage, whose S256 hash goes with the start of a
// sign-in and which exchange-code must present. The SDK and the embed script share the
// key, so a callback page with the SDK finishes what the embedded widget started.
// Server-side integrations call createCodeVerifier/codeChallengeOf and keep the verifier
// in their own session.
import { clearLinkVerifier, readLinkVerifier } from './magic-links.js';

/** sessionStorage key of the pending verifier (per tab, per origin). */
export const VERIFIER_KEY = 'postgate.code-verifier';

let memory: string | null = null;

function area(): Storage | null {
  try {
    return typeof window === 'undefined' ? null : window.sessionStorage;
  } catch {
    return null;
  }
}

/** 32 random bytes, base64url: 43 characters (RFC 7636 §4.1). */
export function createCodeVerifier(): string {
  const bytes = new Uint8Array(32);
  globalThis.crypto.getRandomValues(bytes);
  return base64url(bytes);
}

/** base64url(SHA-256(verifier)), as the server computes it. */
export async function codeChallengeOf(verifier: string): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

/** This tab's pending verifier, made now if there is none; answers its challenge. */
export async function pendingChallenge(): Promise<string> {
  let v = readVerifier();
  if (!v) {
    v = createCodeVerifier();
    memory = v;
    try {
      area()?.setItem(VERIFIER_KEY, v);
    } catch {
      /* memory only */
    }
  }
  return codeChallengeOf(v);
}

/** The pending verifier, if this tab started a sign-in. */
export function readVerifier(): string | null {
  try {
    // A magic link opens in a new tab: its verifier is kept in localStorage (magic-links.ts).
    return area()?.getItem(VERIFIER_KEY) ?? readLinkVerifier() ?? memory;
  } catch {
    return memory;
  }
}

/** Forgets the pending verifier once its sign-in is exchanged. */
export function clearVerifier(): void {
  memory = null;
  clearLinkVerifier();
  try {
    area()?.removeItem(VERIFIER_KEY);
  } catch {
    /* memory only */
  }
}

function base64url(bytes: Uint8Array): string {
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
