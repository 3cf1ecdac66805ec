// control/operations/state.ts on a real SQLite store and the shared Redis, with gateways faked in this
// process: this control's gateways asked, another node's gateway read from the snapshot it published
// (gateway/state/publish.ts) and a node asked not counted twice, a gateway that is down reported, ids
// as slugs, held mail per project, filters, and 404s for an unknown provider or project.
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApiError } from '../../../core/errors.js';
import { connectRedis, type RedisLink } from '../../../core/redis.js';
import { type DeliverySnapshot, noQueue, noWindows, type ProviderFigures } from '../../../common/delivery-state.js';
import type { Gateway, GatewayClients } from '../../../control/delivery/gateways.js';
import { DeliveryStateService } from '../../../control/operations/state.js';
import { publishDeliveryState } from '../../../gateway/state/publish.js';
import { unitStore, type UnitStore } from '../../helpers/unit-store.js';
import { dropKeys, quietLog, sharedRedis, until } from '../../helpers/redis.js';

const silent = { info() {}, warn() {}, error() {}, debug() {} } as never;

function provider(name: string, projectId: string, receiver: number, over: Partial<ProviderFigures> = {}): ProviderFigures {
  const queue = { ...noQueue(), deferred: { ...noQueue().deferred, receiver } };
  const windows = noWindows();
  windows.lastHour.delivered = 1;
  return {
    provider: name,
    queue,
    connectionsOpen: 1,
    connectionsLimit: 5,
    ratePerMinute: 2,
    configuredRate: 60,
    effectiveRate: 30,
    effectiveConnections: 5,
    answers: [{ enhancedCode: '4.2.2', count: receiver, sample: `full ${name}`, lastAtMs: 1_000 * receiver }],
    windows,
    projects: [{ projectId, queue, windows, warmupUsed: 3, warmupNorm: 100, oldestAcceptedMs: 0 }],
    actions: [],
    oldestAcceptedMs: 0,
    ...over,
  };
}

const snapshot = (node: string, providers: ProviderFigures[]): DeliverySnapshot => ({ node, atMs: Date.now(), providers });

function fakeGateways(answers: Record<string, DeliverySnapshot | Error>, asked: string[]) {
  return {
    list: Object.keys(answers).map((name) => ({ name }) as Gateway),
    async deliveryState(gw: Gateway, provider: string, projectId: string) {
      asked.push(`${gw.name} ${provider} ${projectId}`);
      const a = answers[gw.name]!;
      if (a instanceof Error) throw a;
      return a;
    },
  } as unknown as GatewayClients;
}

const code = async (p: Promise<unknown>) => ((await p.catch((e: unknown) => e)) as ApiError).code;
const providers = () => ['google', 'yahoo', 'other'];

describe('the delivery state summed by control', () => {
  const redisTest = sharedRedis();
  let u: UnitStore;
  let redis: RedisLink;
  const links: RedisLink[] = [];
  beforeEach(async () => {
    u = await unitStore('acme');
  });
  afterEach(async () => {
    for (const l of links.splice(0)) await l.close();
    await u.close();
  });
  afterAll(async () => {
    await dropKeys(redisTest.url, redisTest.prefix);
  });

  it("adds this control's gateways and the other nodes' published snapshots, each node once; a gateway that is down is named", async () => {
    const link = () => {
      const l = connectRedis({ redisUrl: redisTest.url, redisPrefix: redisTest.prefix }, quietLog);
      links.push(l);
      return l;
    };
    redis = link();
    const pid = u.project.id;
    const mine = snapshot('node-a', [provider('google', pid, 2), provider('other', pid, 1)]);
    const theirs = snapshot('node-b', [provider('google', pid, 5)]);
    // Both nodes publish; node-a is also asked directly, so its published copy must not count again.
    const pubA = link();
    const pubB = link();
    await until(() => pubA.up && pubB.up && redis.up, 3000, 'redis up');
    publishDeliveryState(pubA, 'node-a', () => mine, quietLog);
    publishDeliveryState(pubB, 'node-b', () => theirs, quietLog);
    const asked: string[] = [];
    const svc = new DeliveryStateService(u.store, fakeGateways({ gw1: mine, gw2: new Error('unavailable') }, asked), silent, providers, redis);
    let s = await svc.status();
    for (let i = 0; i < 20 && s.nodes.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 100));
      s = await svc.status();
    }
    expect(s.nodes).toEqual(['node-a', 'node-b']);
    expect(s.unreachable).toEqual(['gw2']);
    const google = s.providers.find((p) => p.provider === 'google')!;
    expect(google.queue.deferred.receiver).toBe(7);
    expect(google.connections).toEqual({ open: 2, limit: 10 });
    expect(google.rate).toEqual({ per_minute: 4, configured: 60, effective: 30 });
    expect(google.answers).toEqual([{ enhanced_code: '4.2.2', count: 7, sample: 'full google', last_at: new Date(5_000).toISOString() }]);
    expect(google.windows.last_hour.delivered).toBe(2);
    expect(google.projects).toEqual([{ project: 'acme', queue: google.queue, windows: google.windows }]);
    expect(google.warmup).toEqual([{ project: 'acme', used: 6, norm: 100 }]);
    expect(s.providers.find((p) => p.provider === 'other')!.queue.deferred.receiver).toBe(1);
    expect(asked).toEqual(['gw1  ', 'gw2  ']);
  });

  it('filters by provider and project (the project named by slug), with the held mail of the project; unknown ones are 404', async () => {
    const other = await u.another('beta');
    const snap = snapshot('', [provider('google', u.project.id, 2), provider('yahoo', other.id, 4)]);
    const asked: string[] = [];
    const svc = new DeliveryStateService(u.store, fakeGateways({ gw1: snap }, asked), silent, providers);
    const all = await svc.status();
    // A gateway alone reports no node id: it is named by its address.
    expect(all.nodes).toEqual(['gw1']);
    expect(all.providers.map((p) => p.provider)).toEqual(['google', 'yahoo']);
    const beta = await svc.status({ project: 'beta' });
    expect(beta.providers.map((p) => [p.provider, p.queue.deferred.receiver])).toEqual([['yahoo', 4]]);
    expect(asked.at(-1)).toBe(`gw1  ${other.id}`);
    const g = await svc.status({ provider: 'google' });
    expect(g.providers.map((p) => p.provider)).toEqual(['google']);
    expect(await code(svc.status({ provider: 'nosuch' }))).toBe('NOT_FOUND');
    expect(await code(svc.status({ project: 'nosuch' }))).toBe('NOT_FOUND');
    expect(all.held).toEqual({ emails: 0, projects: [] });
  });
});
