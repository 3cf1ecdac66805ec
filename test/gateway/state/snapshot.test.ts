import { describe, expect, it } from 'vitest';
import { clock } from '../../../core/clock.js';
import type { HMailItem } from '../../../gateway/haraka.js';
import { Pacer, type PaceRequest } from '../../../gateway/pacing/pacer.js';
import { deliverySnapshot } from '../../../gateway/state/snapshot.js';
import { QueueState } from '../../../gateway/state/tracker.js';
import type { ActiveAction } from '../../../gateway/shaping/shaper.js';
import { filterSnapshot, sumSnapshots } from '../../../common/delivery-state.js';

const PROVIDERS = ['google', 'yahoo', 'other'];
const label = (n: string) => (PROVIDERS.includes(n) ? n : 'other');
let n = 0;
const item = (domain: string, projectId: string) =>
  ({
    filename: `f${++n}`,
    notes: {},
    todo: { uuid: `u${n}`, domain, rcpt_to: [{ address: `a@${domain}` }], notes: { project_id: projectId } },
  }) as unknown as HMailItem;
const req = (provider: string, domain: string, projectId: string): PaceRequest => ({
  key: `k${++n}`,
  projectId,
  bulk: false,
  domain,
  provider,
  recipients: 1,
  warmupStartMs: 0,
  notBeforeMs: 0,
});

function setup() {
  const pacer = new Pacer({ google: { dailyNorm: 100, growth: 2, maxDailyNorm: 0, ratePerMinute: 600, connections: 4 } }, () => {});
  const queueState = new QueueState(label);
  const idle: Array<[string, number]> = [];
  const actions: ActiveAction[] = [];
  const src = { node: 'n1', queueState, pacer, providers: PROVIDERS, label, connections: { idleByGate: () => idle }, shaper: { actions: () => actions } };
  return { pacer, queueState, idle, actions, src };
}

describe('deliverySnapshot', () => {
  it("joins the tracker's counts with the Pacer's connections, rates and warm-up, and the shaping actions", () => {
    const { pacer, queueState, idle, actions, src } = setup();
    const a = item('gmail.com', 'p1');
    queueState.queued(a);
    queueState.sending(a);
    queueState.deferred(item('gmail.com', 'p2'), 'volume', 'google');
    queueState.outcome('google', 'p1', 'delivered', 3);
    queueState.answer('google', '4.7.28', '421-4.7.28 slow down');
    // Two attempts let go at google (one still holding its slot), one at each of two `other` domains.
    expect(pacer.decide(req('google', 'gmail.com', 'p1'), () => {}).kind).toBe('go');
    const done = req('google', 'gmail.com', 'p1');
    expect(pacer.decide(done, () => {}).kind).toBe('go');
    pacer.release(done.key);
    pacer.decide(req('other', 'a.test', 'p1'), () => {});
    pacer.decide(req('other', 'b.test', 'p1'), () => {});
    idle.push(['google', 1], ['other:a.test', 2]);
    pacer.setShapingLimit('google', 'x', { rate: 30, untilMs: clock.now() + 60_000 });
    actions.push({
      rule: 'gmail-rate',
      provider: 'google',
      projectId: '',
      action: { kind: 'rate', factor: 0.5 },
      value: 30,
      sinceMs: 1,
      untilMs: 2,
      trigger: '421',
    });

    const s = deliverySnapshot(src);
    expect(s.node).toBe('n1');
    expect(s.providers.map((p) => p.provider)).toEqual(['google', 'other']);
    const g = s.providers[0]!;
    expect(g.queue).toMatchObject({ ready: 0, inFlight: 1, deferred: { volume: 1 } });
    expect(g).toMatchObject({ connectionsOpen: 2, connectionsLimit: 4, ratePerMinute: 2, configuredRate: 600, effectiveRate: 30 });
    expect(g.answers).toEqual([{ enhancedCode: '4.7.28', count: 1, sample: '421-4.7.28 slow down', lastAtMs: expect.any(Number) }]);
    expect(g.windows.last5m.delivered).toBe(3);
    expect(g.actions).toEqual([expect.objectContaining({ rule: 'gmail-rate', action: 'rate', value: 30 })]);
    const p1 = g.projects.find((p) => p.projectId === 'p1')!;
    // Day 1 of the warm-up (none known: today): the configured norm.
    expect(p1).toMatchObject({ warmupUsed: 2, warmupNorm: 100, queue: { inFlight: 1 } });
    const o = s.providers[1]!;
    // The gates other:a.test and other:b.test add up under `other`.
    expect(o).toMatchObject({ connectionsOpen: 4, ratePerMinute: 2 });
  });

  it("summarises for the overview: providers without projects and answers, each project's last hour once; the series only unfiltered", () => {
    const { queueState, src } = setup();
    queueState.queued(item('gmail.com', 'p1'));
    queueState.outcome('google', 'p1', 'delivered', 3);
    queueState.outcome('yahoo', 'p1', 'bounced', 1);
    queueState.outcome('yahoo', 'p2', 'delivered', 2);
    queueState.answer('google', '4.7.28', '421-4.7.28 slow down');
    const s = deliverySnapshot(src, { summary: true });
    expect(s.providers.map((p) => [p.provider, p.projects.length, p.answers.length])).toEqual([
      ['google', 0, 0],
      ['yahoo', 0, 0],
    ]);
    expect(s.providers[0]?.queue.ready).toBe(1);
    expect(s.projectsHour).toEqual([
      { projectId: 'p1', lastHour: { delivered: 3, deferred: 0, bounced: 1, complained: 0 } },
      { projectId: 'p2', lastHour: { delivered: 2, deferred: 0, bounced: 0, complained: 0 } },
    ]);
    expect(s.series?.minute.delivered[59]).toBe(5);
    expect(deliverySnapshot(src).projectsHour).toBeUndefined();
    expect(deliverySnapshot(src, { provider: 'google' }).series).toBeUndefined();
  });

  it('narrows to a provider (shown even when idle) or a project', () => {
    const { queueState, src } = setup();
    queueState.queued(item('gmail.com', 'p1'));
    queueState.queued(item('yahoo.com', 'p2'));
    expect(deliverySnapshot(src, { provider: 'yahoo' }).providers.map((p) => p.provider)).toEqual(['yahoo']);
    const idle = deliverySnapshot(src, { provider: 'other' }).providers;
    expect(idle.map((p) => [p.provider, p.queue.ready])).toEqual([['other', 0]]);
    const p2 = filterSnapshot(deliverySnapshot(src, { projectId: 'p2' }), undefined, 'p2');
    expect(p2.providers.map((p) => [p.provider, p.queue.ready])).toEqual([['yahoo', 1]]);
  });

  it('sums nodes: counts, connections and rates add up, limits and actions are taken once', () => {
    const { queueState, src, actions } = setup();
    queueState.queued(item('gmail.com', 'p1'));
    actions.push({
      rule: 'r',
      provider: 'google',
      projectId: '',
      action: { kind: 'suspend', scope: 'provider' },
      value: 0,
      sinceMs: 5,
      untilMs: 9,
      trigger: 't',
    });
    const one = deliverySnapshot(src);
    const [g] = sumSnapshots([one, { ...one, node: 'n2' }]);
    expect(g).toMatchObject({ provider: 'google', queue: { ready: 2 }, connectionsLimit: 8, configuredRate: 600 });
    expect(g!.actions).toHaveLength(1);
    expect(g!.projects).toEqual([expect.objectContaining({ projectId: 'p1', queue: expect.objectContaining({ ready: 2 }), warmupNorm: 100 })]);
  });
});
