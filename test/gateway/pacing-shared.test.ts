// Pacing shared by several gateways through Redis: two pacers together stay within one
// provider's daily warm-up norm and its rate; with Redis gone each keeps to its share; when
// Redis is back (its data lost), sharing resumes with every gateway's count written again.
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clock, DAY_MS, dayOf } from '../../core/clock.js';
import { connectRedis, type RedisLink } from '../../core/redis.js';
import { FLUSH_MS, SharedCounters } from '../../core/shared-counters.js';
import { Pacer, type PaceRequest } from '../../gateway/pacing/pacer.js';
import type { UsageRow } from '../../gateway/outbox/outbox.js';
import { dropKeys, quietLog, randomPrefix, sharedRedis, startOwnRedis, until, type OwnRedis } from '../helpers/redis.js';

const throttles = (norm: number, ratePerMinute = 0) => ({
  google: { dailyNorm: norm, growth: 1, maxDailyNorm: 0, ratePerMinute, connections: 0 },
  other: { dailyNorm: 0, growth: 1, maxDailyNorm: 0, ratePerMinute: 0, connections: 0 },
});

let seq = 0;
const req = (projectId: string, over: Partial<PaceRequest> = {}): PaceRequest => ({
  key: `item-${++seq}`,
  projectId,
  bulk: true,
  domain: 'gmail.com',
  provider: 'google',
  recipients: 1,
  warmupStartMs: 0,
  notBeforeMs: 0,
  ...over,
});

interface Gateway {
  shared: SharedCounters;
  pacer: Pacer;
  persisted: UsageRow[];
}

const links: RedisLink[] = [];
async function gateway(url: string, prefix: string, norm: number, rate = 0): Promise<Gateway> {
  const link = connectRedis({ redisUrl: url, redisPrefix: prefix }, quietLog);
  links.push(link);
  const shared = new SharedCounters(link, { role: 'gateway', nodes: 2 });
  const persisted: UsageRow[] = [];
  const pacer = new Pacer(throttles(norm, rate), (rows) => persisted.push(...rows), shared);
  await until(() => link.up, 5000, 'connected');
  return { shared, pacer, persisted };
}
afterEach(async () => {
  for (const l of links.splice(0)) await l.close();
  clock.setOffset(0);
});

/** As the hook does: prepare (the Redis reservation), then decide. Answers how many went. */
async function send(g: Gateway, r: PaceRequest): Promise<boolean> {
  await g.pacer.prepare(r);
  const d = g.pacer.decide(r, () => {});
  if (d.kind === 'go') g.pacer.done(r.key);
  return d.kind === 'go';
}

/** Both gateways send `each` bulk messages of one project at once; answers how many each let go. */
async function together(gws: Gateway[], projectId: string, each: number): Promise<number[]> {
  return Promise.all(
    gws.map(async (g) => {
      let went = 0;
      const all = await Promise.all(Array.from({ length: each }, () => send(g, req(projectId))));
      for (const ok of all) if (ok) went++;
      return went;
    }),
  );
}

describe('two gateways sharing pacing counts', () => {
  const redis = sharedRedis();

  it("stay together within one provider's daily norm (transactional counted, never held)", async () => {
    const a = await gateway(redis.url, redis.prefix, 40);
    const b = await gateway(redis.url, redis.prefix, 40);
    // Transactional mail is never held, but counts toward the norm.
    for (let i = 0; i < 5; i++) expect(await send(a, req('p1', { bulk: false }))).toBe(true);
    await a.shared.flush();
    const went = await together([a, b], 'p1', 60);
    console.log(`norm 40, 5 transactional first, then 60 bulk at each gateway at once: went ${went}`);
    expect(went[0]! + went[1]!).toBe(35);
    // The held ones say why, with the count over both gateways.
    const next = req('p1');
    await a.pacer.prepare(next);
    const held = a.pacer.decide(next, () => {});
    expect(held).toMatchObject({ kind: 'hold', hold: 'warmup', norm: 40, used: 40 });
    // Each gateway's own counts (its outbox, its stats) stay its own.
    const day = dayOf(clock.now());
    const own = (g: Gateway) => g.pacer.stats('p1', day).reduce((n, p) => n + p.transactional + p.bulk, 0);
    expect(own(a) + own(b)).toBe(40);
  });

  it('share the per-minute rate of a provider', async () => {
    // At a minute's start, so the window does not roll over during the test.
    const now = Date.now();
    clock.setOffset(Math.ceil(now / 60_000) * 60_000 + 1000 - now);
    // A set of gateways of its own: the heartbeat counts three.
    const p = `${redis.prefix}rate:`;
    const a = await gateway(redis.url, p, 0, 600);
    const b = await gateway(redis.url, p, 0, 600);
    // A third gateway has already sent 590 this minute.
    const c = await gateway(redis.url, p, 0, 600);
    c.shared.hit('rate:google', 60_000, 590);
    await c.shared.flush();
    await until(() => [a, b].every((g) => g.shared.nodes === 3), 5000, 'three gateways learnt');
    // Each gateway's own bucket would let 10 go at once; together they have 10 left. Held mail
    // goes when its pacer wakes it (tokens refill, counts are read again).
    const went = { a: 0, b: 0 };
    const drive = async (g: Gateway, side: 'a' | 'b', r: PaceRequest): Promise<void> => {
      await g.pacer.prepare(r);
      const d = g.pacer.decide(r, () => void drive(g, side, r));
      if (d.kind === 'go') {
        went[side]++;
        g.pacer.done(r.key);
      }
    };
    for (let i = 0; i < 20; i++) await drive(a, 'a', req('p2', { bulk: false }));
    const fromA = went.a;
    await new Promise((r) => setTimeout(r, 3 * FLUSH_MS));
    for (let i = 0; i < 20; i++) await drive(b, 'b', req('p2', { bulk: false }));
    const fromB = went.b;
    expect(fromA + fromB).toBeLessThanOrEqual(10);
    expect(fromA).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 2500));
    console.log(`rate 600/min with 590 used by a third gateway: at once A ${fromA}, then B ${fromB}; after 2.5 s A ${went.a}, B ${went.b}`);
    // The documented tolerance: what the other gateway sends in about two flush intervals (600/min: 1).
    expect(went.a + went.b).toBeLessThanOrEqual(10 + Math.ceil((600 / 60_000) * 2 * FLUSH_MS));
    expect(went.a + went.b).toBeGreaterThanOrEqual(9);
  });
});

describe('gateways while Redis is away', () => {
  let own: OwnRedis;
  const prefix = randomPrefix();
  beforeAll(async () => {
    own = await startOwnRedis();
  });
  afterAll(async () => {
    await own.kill();
  });

  it('each falls back to its share of the norm without an error; back, sharing resumes and Redis has every count again', async () => {
    const a = await gateway(own.url, prefix, 40);
    const b = await gateway(own.url, prefix, 40);
    await until(() => a.shared.nodes === 2 && b.shared.nodes === 2, 5000, 'two gateways learnt');
    expect(await together([a, b], 'p1', 10)).toEqual([10, 10]);
    await a.shared.flush();
    await b.shared.flush();
    await own.kill();
    await until(() => !a.shared.connected && !b.shared.connected, 2000, 'both noticed');
    // Each may reach half the norm on its own count: 20 each, of which 10 are used.
    const away = await together([a, b], 'p1', 30);
    console.log(`norm 40, 10 + 10 sent, then Redis away and 30 more at each: went ${away}`);
    expect(away).toEqual([10, 10]);
    // A project new today: each gateway gets half the norm.
    expect(await together([a, b], 'p-new', 30)).toEqual([20, 20]);
    await own.start();
    await until(() => a.shared.connected && b.shared.connected, 5000, 'reconnected');
    await new Promise((r) => setTimeout(r, 4 * FLUSH_MS));
    // The restart lost everything; each gateway wrote its count of the day again.
    const r = new Redis(own.url);
    const day = Math.floor(clock.now() / DAY_MS);
    const fields = await r.hgetall(`${prefix}count:warmup:p1:google:${DAY_MS}:${day}`);
    r.disconnect();
    expect(Object.values(fields).map(Number)).toEqual([20, 20]);
    // Shared again: a third project's norm holds exactly over both.
    const back = await together([a, b], 'p3', 30);
    expect(back[0]! + back[1]!).toBe(40);
    await dropKeys(own.url, prefix);
  });
});
