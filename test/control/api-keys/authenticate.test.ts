// control/api-keys/authenticate.ts on a real store: the caller of a key, from memory once seen; the
// kinds and scopes a route admits; a revoked key refused at once (through the invalidation bus),
// and nothing cached trusted after a reset.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KeyAuthenticator, MAIL_KEYS } from '../../../control/api-keys/authenticate.js';
import { newApiKey } from '../../../control/api-keys/issue.js';
import type { ApiError } from '../../../core/errors.js';
import { localInvalidator, type Invalidator } from '../../../core/invalidation.js';
import { unitStore, type UnitStore } from '../../helpers/unit-store.js';

let u: UnitStore;
let live: string;
let authScope: string;
let test: string;
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: ApiError) => `${e.code}: ${e.message}`,
  );

beforeEach(async () => {
  u = await unitStore();
  const keys = [newApiKey(u.project.id, 'live', 'all', 1), newApiKey(u.project.id, 'live', 'auth', 1), newApiKey(u.project.id, 'test', 'all', 1)];
  for (const k of keys) await u.store.apiKeys.create(k.row);
  [live, authScope, test] = keys.map((k) => k.plain) as [string, string, string];
});

afterEach(() => u.close());

describe('resolve', () => {
  it('a live key of scope all may send mail; its caller names the key and the project', async () => {
    const a = new KeyAuthenticator(u.store, u.invalidator);
    const c = await a.resolve(live, MAIL_KEYS);
    expect(c.project.id).toBe(u.project.id);
    expect(c.key).toMatchObject({ kind: 'live', scope: 'all' });
  });

  it('refuses a missing, unknown or malformed key, and a kind or scope the route does not admit', async () => {
    const a = new KeyAuthenticator(u.store, u.invalidator);
    expect(await refusal(a.resolve(undefined, MAIL_KEYS))).toBe('INVALID_API_KEY: Missing API key');
    expect(await refusal(a.resolve('pg_live_unknown', MAIL_KEYS))).toBe('INVALID_API_KEY: Invalid API key');
    expect(await refusal(a.resolve(`${live}x`, MAIL_KEYS))).toBe('INVALID_API_KEY: Invalid API key');
    expect(await refusal(a.resolve(test, MAIL_KEYS))).toBe('INVALID_API_KEY: This test key cannot call this API');
    expect(await refusal(a.resolve(authScope, MAIL_KEYS))).toBe('INVALID_API_KEY: This live key (auth scope) cannot call this API');
    expect(await refusal(a.resolve(authScope, { kinds: ['live', 'test'], scopes: ['all', 'auth'] }))).toBe('ok');
  });
});

describe('the cache', () => {
  it('answers from memory once a key was seen, and refuses from memory what it knows is bad', async () => {
    const a = new KeyAuthenticator(u.store, u.invalidator);
    expect(a.cached(live, MAIL_KEYS)).toBeUndefined();
    await a.resolve(live, MAIL_KEYS);
    expect(a.cached(live, MAIL_KEYS)?.project.id).toBe(u.project.id);
    expect(a.allowedFromCache(live, MAIL_KEYS)).toBeDefined();
    await refusal(a.resolve('pg_live_unknown', MAIL_KEYS));
    expect(() => a.cached('pg_live_unknown', MAIL_KEYS)).toThrow(expect.objectContaining({ code: 'INVALID_API_KEY' }));
    expect(a.allowedFromCache('pg_live_unknown', MAIL_KEYS)).toBeUndefined();
    expect(a.allowedFromCache(undefined, MAIL_KEYS)).toBeUndefined();
  });

  it('a revoked key is refused at once on every authenticator that hears the bus', async () => {
    const a = new KeyAuthenticator(u.store, u.invalidator);
    const b = new KeyAuthenticator(u.store, u.invalidator);
    await a.resolve(live, MAIL_KEYS);
    await b.resolve(live, MAIL_KEYS);
    const [key] = (await u.store.apiKeys.list(u.project.id)).filter((k) => k.kind === 'live' && k.scope === 'all');
    const revoked = await u.store.apiKeys.revoke(u.project.id, key!.id, Date.now());
    // What the admin API does after revoking (control/admin/routes.ts).
    u.invalidator.publish('key', revoked!.hash);
    for (const x of [a, b]) {
      expect(x.cached(live, MAIL_KEYS)).toBeUndefined();
      expect(await refusal(x.resolve(live, MAIL_KEYS))).toBe('INVALID_API_KEY: Invalid API key');
    }
  });

  it('a node that may have missed invalidations trusts nothing it holds', async () => {
    let reset = () => {};
    const bus: Invalidator = { ...localInvalidator(), onReset: (fn) => void (reset = fn) };
    const a = new KeyAuthenticator(u.store, bus);
    await a.resolve(live, MAIL_KEYS);
    expect(a.cached(live, MAIL_KEYS)).toBeDefined();
    reset();
    expect(a.cached(live, MAIL_KEYS)).toBeUndefined();
  });

  it('a project change drops the project from memory (its key stays)', async () => {
    const a = new KeyAuthenticator(u.store, u.invalidator);
    await a.resolve(live, MAIL_KEYS);
    await u.store.projects.setStatus(u.project.id, 'paused');
    u.invalidator.publish('project', u.project.id);
    expect(a.cached(live, MAIL_KEYS)).toBeUndefined();
    expect((await a.resolve(live, MAIL_KEYS)).project.status).toBe('paused');
  });
});
