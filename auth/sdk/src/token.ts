// JWTs for the app's own backend (POST /api/v1/auth/token): a token is kept while it has time left, a new one is
// asked for shortly before it expires (30 s, or a tenth of its lifetime when that is shorter), callers at the same
// moment share one request, and a sign-out (another session token, or none) drops it.
import { useCallback, useEffect, useMemo, useRef } from 'react';
import type { PostgateClient } from './client.js';
import { PostgateError } from './errors.js';
import type { SessionJwt } from './types.js';

/** A token is renewed when less than this is left of it (or a tenth of its lifetime, when that is less). */
export const REFRESH_BEFORE_MS = 30_000;

export interface JwtCacheOptions {
  /** The clock (tests give a fake one). */
  now?: () => number;
}

export class JwtCache {
  private held: { session: string; token: string; expiresAt: number; renewAt: number } | null = null;
  private pending: { session: string; promise: Promise<string> } | null = null;
  /** Bumped by clear(): a request started before it does not bring its token back. */
  private generation = 0;
  private readonly now: () => number;

  constructor(
    private readonly fetchToken: (sessionToken: string) => Promise<SessionJwt>,
    opts: JwtCacheOptions = {},
  ) {
    this.now = opts.now ?? (() => Date.now());
  }

  /** A token for this session: the kept one while it is fresh, else one request shared by every caller. */
  get(sessionToken: string): Promise<string> {
    const now = this.now();
    const h = this.held;
    if (h && h.session === sessionToken && now < h.renewAt) return Promise.resolve(h.token);
    if (this.pending?.session === sessionToken) return this.pending.promise;
    const gen = this.generation;
    const asked = now;
    const promise = this.fetchToken(sessionToken).then(
      (r) => {
        const expiresAt = Date.parse(r.expiresAt);
        const lifetime = Math.max(0, expiresAt - asked);
        if (gen === this.generation) {
          this.held = { session: sessionToken, token: r.token, expiresAt, renewAt: expiresAt - Math.min(REFRESH_BEFORE_MS, lifetime / 10) };
          if (this.pending?.promise === promise) this.pending = null;
        }
        return r.token;
      },
      (err: unknown) => {
        if (gen === this.generation && this.pending?.promise === promise) this.pending = null;
        throw err;
      },
    );
    this.pending = { session: sessionToken, promise };
    return promise;
  }

  /** Forgets the token (sign-out, another session). */
  clear(): void {
    this.generation++;
    this.held = null;
    this.pending = null;
  }
}

/**
 * The provider's getToken(): a JWT of the current session, or null when signed out. A SESSION_INVALID answer
 * calls `signedOut` (the provider's signed-out state, as for GET /session) and answers null; other failures throw.
 */
export function useSessionJwt(client: PostgateClient, sessionToken: string | null, signedOut: () => void): () => Promise<string | null> {
  const cache = useMemo(() => new JwtCache((t) => client.getToken(t)), [client]);
  const latest = useRef({ sessionToken, signedOut });
  latest.current = { sessionToken, signedOut };
  // A sign-out, or another session: the token of the last one must not be handed out.
  // biome-ignore lint/correctness/useExhaustiveDependencies: the cache is cleared whenever the session token changes
  useEffect(() => () => cache.clear(), [cache, sessionToken]);
  return useCallback(async () => {
    const t = latest.current.sessionToken;
    if (!t) return null;
    try {
      return await cache.get(t);
    } catch (err) {
      if (err instanceof PostgateError && err.code === 'SESSION_INVALID') {
        cache.clear();
        if (latest.current.sessionToken === t) latest.current.signedOut();
        return null;
      }
      throw err;
    }
  }, [cache]);
}
