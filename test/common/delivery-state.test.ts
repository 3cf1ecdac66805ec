import { describe, expect, it } from 'vitest';
import {
  type DeliverySnapshot,
  filterSnapshot,
  noProvider,
  noQueue,
  noSeries,
  noWindows,
  type ProviderFigures,
  type QueueFigures,
  sumSeries,
  sumSnapshots,
} from '../../common/delivery-state.js';

const queue = (over: Partial<QueueFigures> & { receiver?: number } = {}): QueueFigures => {
  const q = noQueue();
  q.ready = over.ready ?? 0;
  q.inFlight = over.inFlight ?? 0;
  q.deferred.receiver = over.receiver ?? 0;
  return q;
};

const provider = (over: Partial<ProviderFigures> & { provider: string }): ProviderFigures => ({ ...noProvider(over.provider), ...over });

const action = {
  rule: 'google-unsolicited-rate',
  provider: 'google',
  projectId: '',
  action: 'rate',
  value: 300,
  sinceMs: 1000,
  untilMs: 9000,
  trigger: '421 4.7.28',
};

function node(name: string, deferred: number, delivered: number, sample: string, lastAtMs: number): DeliverySnapshot {
  const windows = noWindows();
  windows.last5m.delivered = delivered;
  return {
    node: name,
    atMs: 0,
    providers: [
      provider({
        provider: 'google',
        queue: queue({ receiver: deferred, ready: 1 }),
        connectionsOpen: 2,
        connectionsLimit: 10,
        ratePerMinute: 30,
        configuredRate: 600,
        effectiveRate: 300,
        answers: [{ enhancedCode: '4.2.0', count: deferred, sample, lastAtMs }],
        windows,
        projects: [
          { projectId: 'p1', queue: queue({ receiver: deferred }), windows, warmupUsed: delivered, warmupNorm: 500, oldestAcceptedMs: 0 },
          { projectId: 'p2', queue: queue({ ready: 1 }), windows: noWindows(), warmupUsed: 1, warmupNorm: 500, oldestAcceptedMs: 0 },
        ],
        actions: [action],
      }),
    ],
  };
}

describe('sumSnapshots', () => {
  it('adds the nodes: counts, windows, connections and their limits, attempts; a shared rate and one shared action once', () => {
    const [google] = sumSnapshots([node('a', 2, 5, 'older answer', 100), node('b', 3, 7, 'newer answer', 200)]);
    expect(google!.queue).toMatchObject({ ready: 2, deferred: { receiver: 5, network: 0 } });
    expect(google!.windows.last5m.delivered).toBe(12);
    expect(google!).toMatchObject({ connectionsOpen: 4, connectionsLimit: 20, ratePerMinute: 60, configuredRate: 600, effectiveRate: 300 });
    // One group per enhanced code, its sample the latest answer.
    expect(google!.answers).toEqual([{ enhancedCode: '4.2.0', count: 5, sample: 'newer answer', lastAtMs: 200 }]);
    // The same action reached both gateways through Redis: shown once.
    expect(google!.actions).toEqual([action]);
    expect(google!.projects.map((p) => [p.projectId, p.queue.deferred.receiver, p.warmupUsed])).toEqual([
      ['p1', 5, 12],
      ['p2', 0, 2],
    ]);
  });

  it('keeps providers apart and gives nothing for no nodes', () => {
    expect(sumSnapshots([])).toEqual([]);
    const a: DeliverySnapshot = { node: 'a', atMs: 0, providers: [provider({ provider: 'yahoo', queue: queue({ ready: 1 }) })] };
    const b: DeliverySnapshot = { node: 'b', atMs: 0, providers: [provider({ provider: 'google', queue: queue({ ready: 2 }) })] };
    expect(sumSnapshots([a, b]).map((p) => [p.provider, p.queue.ready])).toEqual([
      ['yahoo', 1],
      ['google', 2],
    ]);
  });
});

describe('filterSnapshot', () => {
  it("narrows to a project: its own queue and windows, its own and provider-wide actions, not another project's", () => {
    const s = node('a', 2, 5, 'x', 1);
    s.providers[0]!.actions.push({ ...action, rule: 'google-auth', projectId: 'p2', action: 'suspend' });
    const mine = filterSnapshot(s, undefined, 'p1');
    const g = mine.providers[0]!;
    expect(g.queue).toEqual(queue({ receiver: 2 }));
    expect(g.projects.map((p) => p.projectId)).toEqual(['p1']);
    expect(g.actions.map((a) => a.rule)).toEqual(['google-unsolicited-rate']);
  });

  it('leaves out a provider without the project unless it is the one asked for', () => {
    const s = node('a', 2, 5, 'x', 1);
    expect(filterSnapshot(s, undefined, 'p9').providers).toEqual([]);
    expect(filterSnapshot(s, 'google', 'p9').providers.map((p) => [p.provider, p.queue])).toEqual([['google', noQueue()]]);
    expect(filterSnapshot(s, 'yahoo').providers).toEqual([]);
    expect(filterSnapshot(s, 'google').providers).toHaveLength(1);
  });
});

describe('sumSeries', () => {
  const now = Date.UTC(2030, 0, 1, 12, 30, 15);
  it("adds the nodes' buckets by time: a snapshot read a minute earlier lands one bucket back; one without series adds nothing", () => {
    const a = noSeries(now);
    a.minute.delivered[59] = 2;
    a.minute.bounced[0] = 1;
    a.hour.delivered[23] = 2;
    // Published a minute ago: its last bucket is now's second to last, its first falls out.
    const b = noSeries(now - 60_000);
    b.minute.delivered[59] = 5;
    b.minute.bounced[0] = 7;
    b.hour.delivered[23] = 5;
    const sum = sumSeries([{ series: a }, { series: b }, {}], now);
    expect(sum.minute.startMs).toBe(a.minute.startMs);
    expect(sum.minute.delivered[59]).toBe(2);
    expect(sum.minute.delivered[58]).toBe(5);
    expect(sum.minute.bounced[0]).toBe(1);
    expect(sum.minute.bounced.reduce((x, y) => x + y)).toBe(1);
    expect(sum.hour.delivered[23]).toBe(7);
  });

  it('gives zeros for no nodes, with 60 and 24 buckets ending now', () => {
    const sum = sumSeries([], now);
    expect(sum.minute.delivered).toEqual(new Array(60).fill(0));
    expect(sum.hour.complained).toEqual(new Array(24).fill(0));
    expect(sum.minute.startMs + 59 * 60_000).toBe(Date.UTC(2030, 0, 1, 12, 30));
    expect(sum.hour.startMs + 23 * 3600_000).toBe(Date.UTC(2030, 0, 1, 12));
  });

  it('sums the oldest accepted time as the oldest of the nodes, 0 meaning none', () => {
    const p1 = { ...noProvider('google'), oldestAcceptedMs: 5_000 };
    const p2 = { ...noProvider('google'), oldestAcceptedMs: 0 };
    const p3 = { ...noProvider('google'), oldestAcceptedMs: 3_000 };
    const [sum] = sumSnapshots([
      { node: 'a', atMs: now, providers: [p1] },
      { node: 'b', atMs: now, providers: [p2] },
      { node: 'c', atMs: now, providers: [p3] },
    ]);
    expect(sum?.oldestAcceptedMs).toBe(3_000);
  });
});
