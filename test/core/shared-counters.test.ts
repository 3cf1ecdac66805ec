// Counters several nodes share through Redis: local counting, flushed every 50 ms, read back.
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clock } from '../../core/clock.js';
import { connectRedis, type RedisLink } from '../../core/redis.js';
import { FLUSH_MS, SharedCounters } from '../../core/shared-counters.js';
import { dropKeys, quietLog, randomPrefix, sharedRedis, startOwnRedis, until, type OwnRedis } from '../helpers/redis.js';

const links: RedisLink[] = [];
async function nodeOn(url: string, prefix: string, role = 'test'): Promise<SharedCounters> {
  const link = connectRedis({ redisUrl: url, redisPrefix: prefix }, quietLog);
  links.push(link);
  const c = new SharedCounters(link, { role, nodes: 2 });
  await until(() => link.up, 5000, 'connected');
  return c;
}
afterEach(async () => {
  for (const l of links.splice(0)) await l.close();
  clock.setOffset(0);
});

describe('SharedCounters on the shared Redis', () => {
  const redis = sharedRedis();

  it('each node sees the others within a flush; windows are aligned to the clock and end together', async () => {
    const a = await nodeOn(redis.url, redis.prefix);
    const b = await nodeOn(redis.url, redis.prefix);
    const now = clock.now();
    const first = a.hit('k', 60_000, 5, now);
    expect(first).toMatchObject({ count: 5, local: 5, resetAt: (Math.floor(now / 60_000) + 1) * 60_000 });
    b.hit('k', 60_000, 2);
    await until(() => a.hit('k', 60_000, 0).count === 7 && b.hit('k', 60_000, 0).count === 7, 500, 'both see 7');
    expect(a.hit('k', 60_000, 0)).toMatchObject({ count: 7, local: 5, fresh: true });
    // The next window starts from nothing.
    clock.setOffset(60_000);
    expect(a.hit('k', 60_000, 0)).toMatchObject({ count: 0, local: 0 });
  });

  it('learns the number of nodes from the heartbeat', async () => {
    const p = randomPrefix();
    const a = await nodeOn(redis.url, p, 'hb');
    const b = await nodeOn(redis.url, p, 'hb');
    await nodeOn(redis.url, p, 'hb');
    await until(() => a.nodes === 3 && b.nodes === 3, 5000, 'three nodes');
    for (const l of links.splice(0)) await l.close();
    await dropKeys(redis.url, p);
  });

  it('reserve() is exact: two nodes racing for a limit of 50 get 50 together', async () => {
    const a = await nodeOn(redis.url, redis.prefix);
    const b = await nodeOn(redis.url, redis.prefix);
    const tries = Array.from({ length: 80 }, (_, i) => (i % 2 ? a : b).reserve('norm', 86_400_000, 1, 50));
    const got = await Promise.all(tries);
    expect(got.filter((r) => r?.ok).length).toBe(50);
    await a.flush();
    await b.flush();
    await a.flush();
    expect(a.hit('norm', 86_400_000, 0).count).toBe(50);
    expect(a.hit('norm', 86_400_000, 0).local + b.hit('norm', 86_400_000, 0).local).toBe(50);
  });

  it('judged: the others are assumed to count as this node did since its previous read; with one node it is the count', async () => {
    const p = randomPrefix();
    const a = await nodeOn(redis.url, p, 'judge');
    const b = await nodeOn(redis.url, p, 'judge');
    await until(() => a.nodes === 2, 5000, 'two nodes learnt');
    // Before any read of the window each node keeps to its share: judged = local × 2.
    const blind = a.hit('w', 60_000, 3);
    expect(blind).toMatchObject({ count: 3, judged: 6, fresh: false });
    b.hit('w', 60_000, 1);
    await a.flush();
    await b.flush();
    await a.flush();
    await a.flush();
    // Two reads later, with no new counting: the count as it is.
    expect(a.hit('w', 60_000, 0)).toMatchObject({ count: 4, judged: 4, fresh: true });
    expect(a.hit('w', 60_000, 2)).toMatchObject({ count: 6, judged: 8 });
    const alone = randomPrefix();
    const single = await nodeOn(redis.url, alone, 'alone');
    await until(() => single.nodes === 1, 5000, 'one node');
    expect(single.hit('w', 60_000, 5).judged).toBe(5);
    for (const l of links.splice(0)) await l.close();
    await dropKeys(redis.url, p);
    await dropKeys(redis.url, alone);
  });
});

describe('SharedCounters across a Redis restart', () => {
  let own: OwnRedis;
  const prefix = randomPrefix();
  beforeAll(async () => {
    own = await startOwnRedis();
  });
  afterAll(async () => {
    await own.kill();
  });

  it('while Redis is away counting goes on locally, not fresh, without throwing; after a restart (data lost) each node writes its count again', async () => {
    const a = await nodeOn(own.url, prefix);
    const b = await nodeOn(own.url, prefix);
    await until(() => a.nodes === 2, 5000, 'two nodes learnt');
    a.hit('day', 86_400_000, 3);
    b.hit('day', 86_400_000, 4);
    await until(() => a.hit('day', 86_400_000, 0).count === 7, 1000, 'shared');
    await own.kill();
    await until(() => !a.connected && !b.connected, 2000, 'noticed');
    const away = a.hit('day', 86_400_000, 2);
    expect(away).toMatchObject({ count: 9, local: 5, fresh: false });
    expect(away.judged).toBeGreaterThanOrEqual(10);
    expect(await a.reserve('day', 86_400_000, 1, 100)).toBeUndefined();
    await own.start();
    await until(() => a.hit('day', 86_400_000, 0).fresh && b.hit('day', 86_400_000, 0).fresh, 5000, 'fresh again');
    await new Promise((r) => setTimeout(r, 3 * FLUSH_MS));
    expect(a.hit('day', 86_400_000, 0).count).toBe(9);
    expect(b.hit('day', 86_400_000, 0).count).toBe(9);
    // Redis holds each node's count again, though the restart lost everything.
    const r = new Redis(own.url);
    const [key] = await r.keys(`${prefix}count:day:*`);
    const fields = Object.values(await r.hgetall(key!))
      .map(Number)
      .sort();
    r.disconnect();
    expect(fields).toEqual([4, 5]);
    await dropKeys(own.url, prefix);
  });
});
