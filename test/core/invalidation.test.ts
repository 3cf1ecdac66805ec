// The invalidation bus: local on one node; through Redis, a publish on one node reaches every
// other within a second, and a node that lost Redis keeps no cache entry older than a second.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sessions } from '../../auth/sessions.js';
import { localInvalidator, redisInvalidator, RESET_WHILE_AWAY_MS, type RedisInvalidator } from '../../core/invalidation.js';
import { connectRedis, type RedisLink } from '../../core/redis.js';
import type { Caller } from '../../control/api-keys/authenticate.js';
import type { SessionRow, SignInStore, UserRow } from '../../control/store/index.js';
import { dropKeys, quietLog, randomPrefix, startOwnRedis, stopTestRedis, testRedisUrl, until, type OwnRedis } from '../helpers/redis.js';

interface Node {
  link: RedisLink;
  inv: RedisInvalidator;
  heard: string[];
  resets: number;
}

async function node(url: string, prefix: string): Promise<Node> {
  const link = connectRedis({ redisUrl: url, redisPrefix: prefix }, quietLog);
  const inv = redisInvalidator(link, quietLog);
  const n: Node = { link, inv, heard: [], resets: 0 };
  inv.subscribe('session', (k) => n.heard.push(k));
  inv.onReset(() => n.resets++);
  await until(() => inv.connected, 5000, 'invalidator connected');
  return n;
}

describe('localInvalidator', () => {
  it('delivers to the subscribers of a channel and is always connected', () => {
    const inv = localInvalidator();
    const got: string[] = [];
    inv.subscribe('key', (k) => got.push(k));
    inv.publish('key', 'a');
    inv.publish('other', 'b');
    expect(got).toEqual(['a']);
    expect(inv.connected).toBe(true);
  });
});

describe('redisInvalidator on the shared Redis', () => {
  let url: string;
  const prefix = randomPrefix();
  const nodes: Node[] = [];
  beforeAll(async () => {
    url = await testRedisUrl();
  });
  afterAll(async () => {
    for (const n of nodes) await n.link.close();
    await dropKeys(url, prefix);
    await stopTestRedis();
  });

  it('a publish on A reaches A at once and B within a second, exactly once each; another prefix hears nothing', async () => {
    const a = await node(url, prefix);
    const b = await node(url, prefix);
    const elsewhere = await node(url, randomPrefix());
    nodes.push(a, b, elsewhere);
    a.inv.publish('session', 'tok-1');
    expect(a.heard).toEqual(['tok-1']);
    const ms = await until(() => b.heard.length > 0, 1000, 'B heard A');
    expect(ms).toBeLessThan(1000);
    await new Promise((r) => setTimeout(r, 200));
    expect(a.heard).toEqual(['tok-1']);
    expect(b.heard).toEqual(['tok-1']);
    expect(elsewhere.heard).toEqual([]);
  });

  it('sign-out on one control makes the token invalid on the other within a second, and the check stays a memory lookup', async () => {
    const a = await node(url, prefix);
    const b = await node(url, prefix);
    nodes.push(a, b);
    const user: UserRow = { id: 'u1', projectId: 'p1', env: 'live', email: 'a@example.com', emailVerified: true } as UserRow;
    const sessions = new Map<string, SessionRow>();
    let lookups = 0;
    const store = {
      async sessionByHash(hash: string) {
        lookups++;
        return sessions.get(hash);
      },
      async userById(id: string) {
        return id === user.id ? user : undefined;
      },
      async revokeSession(hash: string) {
        return sessions.delete(hash);
      },
    } as unknown as SignInStore;
    const caller = { key: { kind: 'live' }, project: { id: 'p1' } } as unknown as Caller;
    const token = 'pgs_test-token';
    const { createHash } = await import('node:crypto');
    const hash = createHash('sha256').update(token).digest('hex');
    sessions.set(hash, {
      id: 's1',
      projectId: 'p1',
      env: 'live',
      userId: 'u1',
      provider: 'email',
      ip: null,
      userAgent: null,
      createdAt: Date.now(),
      expiresAt: Date.now() + 3600_000,
    });
    const onA = new Sessions(store, a.inv);
    const onB = new Sessions(store, b.inv);
    await onA.check(caller, token);
    await onB.check(caller, token);
    const before = lookups;
    expect(onB.cached(caller, token)?.user.id).toBe('u1');
    expect(lookups).toBe(before);
    await onA.signOut(caller, token);
    expect(onA.cached(caller, token)).toBeUndefined();
    const ms = await until(() => onB.cached(caller, token) === undefined, 1000, 'B forgot the session');
    expect(ms).toBeLessThan(1000);
    await expect(onB.check(caller, token)).rejects.toThrow(/invalid/i);
  });
});

describe('redisInvalidator across a Redis restart', () => {
  let own: OwnRedis;
  const prefix = randomPrefix();
  beforeAll(async () => {
    own = await startOwnRedis();
  });
  afterAll(async () => {
    await own.kill();
  });

  it('loses the connection: caches are dropped at once and every second; back: dropped once more, what was missed is replayed, and publishing works again', async () => {
    const a = await node(own.url, prefix);
    const b = await node(own.url, prefix);
    try {
      a.resets = 0;
      b.resets = 0;
      await own.kill();
      await until(() => !a.inv.connected && !b.inv.connected, 1500, 'both noticed');
      expect(a.resets).toBeGreaterThanOrEqual(1);
      // While away, no entry outlives RESET_WHILE_AWAY_MS: resets keep coming.
      const during = b.resets;
      await new Promise((r) => setTimeout(r, 2.5 * RESET_WHILE_AWAY_MS));
      expect(b.resets - during).toBeGreaterThanOrEqual(2);
      // A revokes something B cannot hear now.
      a.inv.publish('session', 'revoked-while-away');
      expect(a.heard).toContain('revoked-while-away');
      expect(b.heard).not.toContain('revoked-while-away');
      // B's reset on coming back is what covers A's revocation when B resubscribed only after A had
      // replayed it (Redis keeps no pub/sub message for a subscriber that is not there yet).
      let bResetAfterAReplayed = false;
      b.inv.onReset(() => {
        if (a.inv.connected) bResetAfterAReplayed = true;
      });
      await own.start();
      const beforeBack = b.resets;
      await until(() => a.inv.connected && b.inv.connected, 5000, 'both reconnected');
      expect(b.resets).toBeGreaterThan(beforeBack);
      // Sent again once Redis was back: B hears it, or B came back after A and dropped everything then.
      await until(
        () => b.heard.includes('revoked-while-away') || bResetAfterAReplayed,
        5000,
        'B heard what A published while away, or dropped its caches after A replayed it',
      );
      a.inv.publish('session', 'after');
      await until(() => b.heard.includes('after'), 5000, 'B heard A after the restart');
    } finally {
      await a.link.close();
      await b.link.close();
      await dropKeys(own.url, prefix).catch(() => {});
    }
  });
});
