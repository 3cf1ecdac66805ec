// control/pacing/service.ts on a real store, with gateways of the test's own (they record what they
// are sent and answer stats): throttles from the configuration until the operator sets them, pushed
// to every gateway and retried until taken; a project's view summed over gateways, saying which did
// not answer; volume announced beforehand only; the operator's approval releasing held mail.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Gateway, GatewayClients } from '../../../control/delivery/gateways.js';
import { PacingService } from '../../../control/pacing/service.js';
import { clock, dayOf } from '../../../core/clock.js';
import { loadConfig, type Config } from '../../../core/config.js';
import type { ApiError } from '../../../core/errors.js';
import { createLogger } from '../../../core/log.js';
import { unitStore, type UnitStore } from '../../helpers/unit-store.js';

interface FakeGateway extends Gateway {
  throttles: unknown[][];
  clocks: number[];
  refuseTimes: number;
  stats?: Array<{ provider: string; transactional: number; bulk: number; heldBulk: number }>;
}

const gateway = (name: string, o: Partial<FakeGateway> = {}): FakeGateway => ({
  name,
  client: {} as Gateway['client'],
  throttles: [],
  clocks: [],
  refuseTimes: 0,
  ...o,
});

function clients(list: FakeGateway[]): GatewayClients {
  return {
    list,
    async setThrottles(gw: FakeGateway, t: unknown[]) {
      if (gw.refuseTimes > 0) {
        gw.refuseTimes--;
        throw new Error('UNAVAILABLE');
      }
      gw.throttles.push(t);
    },
    async setClock(gw: FakeGateway, offset: number) {
      gw.clocks.push(offset);
    },
    async pacingStats(gw: FakeGateway) {
      if (!gw.stats) throw new Error('UNAVAILABLE');
      return { providers: gw.stats };
    },
  } as unknown as GatewayClients;
}

let u: UnitStore;
let woken = 0;
const log = createLogger('test', 'silent');
const service = (list: FakeGateway[], config: Config = loadConfig({})) => new PacingService(u.store, clients(list), config, log, { wake: () => woken++ });
const code = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: ApiError) => e.code,
  );

beforeEach(async () => {
  u = await unitStore();
  woken = 0;
});
afterEach(async () => {
  clock.setOffset(0);
  await u.close();
});

describe('throttles', () => {
  it('every known provider and other, from the configuration until the operator sets one', async () => {
    const s = service([]);
    const list = await s.throttles();
    expect(list.map((t) => t.provider)).toEqual(s.providers());
    expect(list.map((t) => t.provider)).toContain('other');
    expect(list.every((t) => t.source === 'config' && t.updatedAt === null)).toBe(true);
  });

  it('a change keeps the other numbers, is stored, and is pushed to every gateway', async () => {
    const a = gateway('a');
    const b = gateway('b');
    const s = service([a, b]);
    const before = (await s.throttles()).find((t) => t.provider === 'google')!;
    const view = await s.setThrottle('google', { ratePerMinute: 42, connections: undefined });
    expect(view).toMatchObject({ provider: 'google', ratePerMinute: 42, connections: before.connections, dailyNorm: before.dailyNorm, source: 'operator' });
    expect((await s.throttles()).find((t) => t.provider === 'google')).toMatchObject({ ratePerMinute: 42, source: 'operator' });
    for (const gw of [a, b]) {
      expect(gw.throttles).toHaveLength(1);
      expect(gw.throttles[0]).toContainEqual(expect.objectContaining({ provider: 'google', ratePerMinute: 42 }));
      // What gateways get carries no view-only fields.
      expect(gw.throttles[0]![0]).not.toHaveProperty('source');
    }
  });

  it('refuses an unknown provider and a growth outside 1..10, storing nothing', async () => {
    const s = service([]);
    expect(await code(s.setThrottle('myspace', { ratePerMinute: 1 }))).toBe('INVALID_REQUEST');
    expect(await code(s.setThrottle('google', { growth: 0.5 }))).toBe('INVALID_REQUEST');
    expect(await code(s.setThrottle('google', { growth: 11 }))).toBe('INVALID_REQUEST');
    expect(await u.store.pacing.throttles()).toEqual([]);
  });

  it('a gateway that does not take them yet gets them again (it may be restarting)', async () => {
    const gw = gateway('slow', { refuseTimes: 1 });
    await service([gw]).push(gw);
    expect(gw.throttles).toHaveLength(1);
  });
});

describe('the test clock', () => {
  it('moves control’s clock and every gateway’s, only where the test clock is on', async () => {
    const gw = gateway('a');
    expect(await code(service([gw]).setClockOffset(5000))).toBe('NOT_FOUND');
    await service([gw], { ...loadConfig({}), testClock: true }).setClockOffset(5000);
    expect(clock.offset()).toBe(5000);
    expect(gw.clocks).toEqual([5000]);
  });
});

describe('a project’s view', () => {
  it('sums every gateway’s usage per provider and says which gateways did not answer', async () => {
    const a = gateway('a', { stats: [{ provider: 'google', transactional: 2, bulk: 3, heldBulk: 1 }] });
    const b = gateway('b', { stats: [{ provider: 'google', transactional: 1, bulk: 0, heldBulk: 0 }] });
    const down = gateway('c');
    const v = (await service([a, b, down]).view(u.project)) as {
      providers: Array<Record<string, unknown>>;
      incomplete?: string;
      warmup_day: number;
      day: string;
    };
    expect(v.day).toBe(dayOf(clock.now()));
    expect(v.warmup_day).toBe(1);
    expect(v.providers.find((p) => p.provider === 'google')).toMatchObject({ used: { transactional: 3, bulk: 3, total: 6 }, held_bulk: 1 });
    expect(v.incomplete).toBe('gateways not answering: c');
  });
});

describe('bulk volume', () => {
  it('is announced for today or later, never for a past day', async () => {
    const s = service([]);
    const today = dayOf(clock.now());
    expect(await s.announce(u.project, undefined, 5000)).toMatchObject({ day: today, volume: 5000, source: 'project' });
    expect(await code(s.announce(u.project, '2000-01-01', 5000))).toBe('INVALID_REQUEST');
    expect((await u.store.pacing.allowances(u.project.id, today)).map((a) => [a.volume, a.source])).toEqual([[5000, 'project']]);
  });

  it('an approval with nothing held wakes nobody; it records the operator’s allowance', async () => {
    const r = await service([]).approve(u.project, undefined, 9000);
    expect(r).toMatchObject({ volume: 9000, released: 0 });
    expect(woken).toBe(0);
    expect((await u.store.pacing.allowances(u.project.id, r.day)).map((a) => a.source)).toEqual(['operator']);
  });
});
