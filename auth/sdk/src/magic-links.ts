// Magic links in the SDK. The sign-in is bound to the browser that asked (binding.ts), but the email
// opens the link in a new tab, whose sessionStorage is empty: so a send also keeps this tab's verifier
// in localStorage (same browser, same origin, any tab), where readVerifier finds it on the callback.
// The return itself is the ordinary svc_code path that PostgateProvider already finishes. No React here:
// the embed script imports this file too (its React side is magic-links-react.ts).
import type { PostgateError } from './errors.js';

/** localStorage key of the verifier kept for a magic link's new tab; removed when a code is exchanged. */
export const LINK_VERIFIER_KEY = 'postgate.magic-link-verifier';

export type MagicLinkResult = { status: 'link_sent' } | { status: 'error'; error: PostgateError };

function shared(): Storage | null {
  try {
    return typeof window === 'undefined' ? null : window.localStorage;
  } catch {
    return null;
  }
}

/** Keeps `verifier` for the tab a magic link opens. */
export function keepLinkVerifier(verifier: string | null): void {
  if (!verifier) return;
  try {
    shared()?.setItem(LINK_VERIFIER_KEY, verifier);
  } catch {
    /* no localStorage: only a link opened in this tab finishes */
  }
}

export function readLinkVerifier(): string | null {
  try {
    return shared()?.getItem(LINK_VERIFIER_KEY) ?? null;
  } catch {
    return null;
  }
}

export function clearLinkVerifier(): void {
  try {
    shared()?.removeItem(LINK_VERIFIER_KEY);
  } catch {
    /* nothing kept */
  }
}
