// The React SDK's JWTs (auth/sdk/src/token.ts) with a fake fetch and a fake clock: a token is kept while fresh,
// renewed shortly before it expires, concurrent callers share one request, clear() (sign-out) drops it and
// wins over a request in flight, another session gets its own token, and SESSION_INVALID reaches the caller.
import { describe, expect, it } from 'vitest';
import { PostgateClient, PostgateError } from '../../auth/sdk/src/client.js';
import { JwtCache, REFRESH_BEFORE_MS } from '../../auth/sdk/src/token.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

/** postgate's /token as a fake fetch: each answer a new token living `ttlMs` from the fake clock. */
function fakeServer(ttlMs = 300_000) {
  let now = T0;
  const calls: Array<{ url: string; headers: Record<string, string> }> = [];
  const revoked = new Set<string>();
  let release: (() => void) | null = null;
  let hold = false;
  const fetch = async (url: string | URL | Request, init?: RequestInit) => {
    calls.push({ url: String(url), headers: init?.headers as Record<string, string> });
    if (hold) await new Promise<void>((r) => (release = r));
    const headers = (init?.headers ?? {}) as Record<string, string>;
    const session = (headers.authorization ?? '').slice(7);
    if (revoked.has(session)) return new Response(JSON.stringify({ error: 'Session is invalid or expired', code: 'SESSION_INVALID' }), { status: 401 });
    return new Response(JSON.stringify({ token: `jwt-${calls.length}-${session}`, expiresAt: new Date(now + ttlMs).toISOString() }), { status: 200 });
  };
  return {
    client: new PostgateClient({ apiKey: 'pk_test', baseURL: 'https://auth.example.com', fetch: fetch as typeof globalThis.fetch }),
    calls,
    revoked,
    clock: { now: () => now, advance: (ms: number) => (now += ms) },
    hold: () => (hold = true),
    release: () => {
      hold = false;
      release?.();
    },
  };
}

describe('PostgateClient.getToken', () => {
  it('posts the session to /api/v1/auth/token with the key and answers {token, expiresAt}', async () => {
    const s = fakeServer();
    const r = await s.client.getToken('pgs_one');
    expect(r).toEqual({ token: 'jwt-1-pgs_one', expiresAt: new Date(T0 + 300_000).toISOString() });
    expect(s.calls[0]!.url).toBe('https://auth.example.com/api/v1/auth/token');
    expect(s.calls[0]!.headers).toMatchObject({ 'x-service-key': 'pk_test', authorization: 'Bearer pgs_one' });
  });
});

describe('JwtCache', () => {
  it('keeps a token until shortly before it expires, then asks for a new one', async () => {
    const s = fakeServer(300_000);
    const cache = new JwtCache((t) => s.client.getToken(t), { now: s.clock.now });
    expect(await cache.get('pgs_a')).toBe('jwt-1-pgs_a');
    s.clock.advance(300_000 - REFRESH_BEFORE_MS - 1);
    expect(await cache.get('pgs_a')).toBe('jwt-1-pgs_a');
    expect(s.calls).toHaveLength(1);
    s.clock.advance(1);
    expect(await cache.get('pgs_a')).toBe('jwt-2-pgs_a');
    expect(s.calls).toHaveLength(2);
  });

  it('renews a short-lived token a tenth of its lifetime before it expires', async () => {
    const s = fakeServer(60_000);
    const cache = new JwtCache((t) => s.client.getToken(t), { now: s.clock.now });
    await cache.get('pgs_a');
    s.clock.advance(53_999);
    expect(await cache.get('pgs_a')).toBe('jwt-1-pgs_a');
    s.clock.advance(1);
    expect(await cache.get('pgs_a')).toBe('jwt-2-pgs_a');
  });

  it('concurrent callers share one request', async () => {
    const s = fakeServer();
    const cache = new JwtCache((t) => s.client.getToken(t), { now: s.clock.now });
    const all = await Promise.all(Array.from({ length: 10 }, () => cache.get('pgs_a')));
    expect(new Set(all)).toEqual(new Set(['jwt-1-pgs_a']));
    expect(s.calls).toHaveLength(1);
  });

  it('sign-out drops the token, and a request in flight does not bring it back', async () => {
    const s = fakeServer();
    const cache = new JwtCache((t) => s.client.getToken(t), { now: s.clock.now });
    await cache.get('pgs_a');
    cache.clear();
    expect(await cache.get('pgs_a')).toBe('jwt-2-pgs_a');
    cache.clear();
    s.hold();
    const inFlight = cache.get('pgs_a');
    cache.clear();
    s.release();
    await inFlight;
    // Not kept: the next call asks again.
    expect(await cache.get('pgs_a')).toBe('jwt-4-pgs_a');
  });

  it('another session gets its own token', async () => {
    const s = fakeServer();
    const cache = new JwtCache((t) => s.client.getToken(t), { now: s.clock.now });
    expect(await cache.get('pgs_a')).toBe('jwt-1-pgs_a');
    expect(await cache.get('pgs_b')).toBe('jwt-2-pgs_b');
  });

  it('SESSION_INVALID at a refresh reaches the caller, and nothing stale is handed out after it', async () => {
    const s = fakeServer();
    const cache = new JwtCache((t) => s.client.getToken(t), { now: s.clock.now });
    await cache.get('pgs_a');
    s.revoked.add('pgs_a');
    // Still fresh: the kept token (revocation is seen at the next refresh).
    expect(await cache.get('pgs_a')).toBe('jwt-1-pgs_a');
    s.clock.advance(300_000);
    const err = await cache.get('pgs_a').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PostgateError);
    expect((err as PostgateError).code).toBe('SESSION_INVALID');
    // A failed request is not shared forever: the next call asks again.
    await expect(cache.get('pgs_a')).rejects.toMatchObject({ code: 'SESSION_INVALID' });
    expect(s.calls).toHaveLength(3);
  });
});
