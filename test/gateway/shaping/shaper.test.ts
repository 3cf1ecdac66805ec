// gateway/shaping/shaper.ts with a real Pacer and delivery holds: a matching answer takes its
// action (a rate or connections lowered by a value or a factor, a suspension of the provider or of
// one project), an action in force is extended instead of taken again, everything comes back when
// it ends (a moved clock included), and with Redis an action taken on one gateway holds on another
// (published, and loaded by a gateway that starts later).
import { afterEach, describe, expect, it } from 'vitest';
import { clock } from '../../../core/clock.js';
import type { ShapingRule } from '../../../core/config.js';
import { connectRedis, type RedisLink } from '../../../core/redis.js';
import { Pacer, type PaceRequest } from '../../../gateway/pacing/pacer.js';
import { DeliveryHolds } from '../../../gateway/shaping/holds.js';
import { Shaper } from '../../../gateway/shaping/shaper.js';
import { quietLog, sharedRedis, until } from '../../helpers/redis.js';

const throttles = {
  google: { dailyNorm: 0, growth: 1, maxDailyNorm: 0, ratePerMinute: 600, connections: 10 },
  yahoo: { dailyNorm: 0, growth: 1, maxDailyNorm: 0, ratePerMinute: 0, connections: 0 },
  other: { dailyNorm: 0, growth: 1, maxDailyNorm: 0, ratePerMinute: 0, connections: 0 },
};
const rules: ShapingRule[] = [
  { name: 'g-rate', providers: ['google'], match: { enhancedCodes: ['4.7.28'] }, action: { kind: 'rate', factor: 0.5 }, durationSeconds: 60 },
  { name: 'g-conn', providers: ['google'], match: { pattern: 'server busy' }, action: { kind: 'connections', value: 2 }, durationSeconds: 60 },
  { name: 'y-stop', providers: ['yahoo'], match: { pattern: '\\[TS03\\]' }, action: { kind: 'suspend', scope: 'provider' }, durationSeconds: 60 },
  { name: 'y-slow', providers: ['yahoo'], match: { pattern: '\\[TSS04\\]' }, action: { kind: 'rate', factor: 0.5 }, durationSeconds: 60 },
  { name: 'p-stop', match: { enhancedCodes: ['4.7.26'] }, action: { kind: 'suspend', scope: 'project' }, durationSeconds: 60 },
];

let seq = 0;
const req = (provider: string, projectId = 'p1', over: Partial<PaceRequest> = {}): PaceRequest => ({
  key: `item-${++seq}`,
  projectId,
  bulk: false,
  domain: provider === 'yahoo' ? 'yahoo.com' : 'gmail.com',
  provider,
  recipients: 1,
  warmupStartMs: 0,
  notBeforeMs: 0,
  ...over,
});

function setup(redis?: RedisLink) {
  const pacer = new Pacer(throttles, () => {});
  const holds = new DeliveryHolds();
  pacer.useHolds(holds);
  const shaper = new Shaper({ rules, pacer, holds, log: quietLog, redis });
  return { pacer, holds, shaper };
}

afterEach(() => clock.setOffset(0));

describe('shaper', () => {
  it('lowers the rate by a factor and the connections to a value at once, and puts them back when the action ends', () => {
    const { pacer, shaper } = setup();
    const taken = shaper.observe({ provider: 'google', projectId: 'p1', response: '421-4.7.28 unusual rate', enhancedCode: '4.7.28' });
    expect(taken).toMatchObject([{ rule: 'g-rate', provider: 'google', projectId: '', value: 300 }]);
    expect(pacer.effective('google')).toMatchObject({ ratePerMinute: 300, connections: 10 });
    shaper.observe({ provider: 'google', projectId: 'p1', response: '451 4.7.500 Server busy. Please try again later' });
    expect(pacer.effective('google')).toMatchObject({ ratePerMinute: 300, connections: 2 });
    expect(pacer.throttleOf('google').ratePerMinute).toBe(600);
    expect(shaper.actions().map((a) => a.rule)).toEqual(['g-rate', 'g-conn']);
    // Another provider is untouched.
    expect(pacer.effective('yahoo').ratePerMinute).toBe(0);

    clock.setOffset(61_000);
    shaper.tick();
    expect(shaper.actions()).toEqual([]);
    expect(pacer.effective('google')).toMatchObject({ ratePerMinute: 600, connections: 10 });
  });

  it('extends an action in force for the same rule instead of taking it again', () => {
    const { shaper } = setup();
    const [first] = shaper.observe({ provider: 'google', projectId: 'p1', response: '421 4.7.28 x' });
    const until0 = first!.untilMs;
    clock.setOffset(10_000);
    const [again] = shaper.observe({ provider: 'google', projectId: 'p2', response: '421 4.7.28 y' });
    expect(again).toBe(first);
    expect(shaper.actions()).toHaveLength(1);
    expect(shaper.actions()[0]).toMatchObject({ sinceMs: first!.sinceMs, value: 300 });
    expect(shaper.actions()[0]!.untilMs).toBeGreaterThanOrEqual(until0 + 10_000);
  });

  it('a factor where no limit is set lowers what the provider got in the last minute', () => {
    const { pacer, shaper } = setup();
    for (let i = 0; i < 10; i++) expect(pacer.decide(req('yahoo'), () => {})).toEqual({ kind: 'go' });
    expect(pacer.shapingBase('yahoo', 'rate')).toBe(10);
    expect(pacer.shapingBase('yahoo', 'connections')).toBe(10);
    expect(pacer.shapingBase('google', 'rate')).toBe(600);
    expect(shaper.observe({ provider: 'yahoo', projectId: 'p1', response: '421 4.7.0 [TSS04] deferred' })).toMatchObject([{ rule: 'y-slow', value: 5 }]);
    expect(pacer.effective('yahoo')).toMatchObject({ ratePerMinute: 5, connections: 0 });
  });

  it("suspends a provider for every project, holding its mail with the rule's name until the end, then wakes it", () => {
    const { pacer, shaper } = setup();
    shaper.observe({ provider: 'yahoo', projectId: 'p1', response: '421 4.7.0 [TS03] All messages from 1.2.3.4 will be permanently deferred' });
    const woken: string[] = [];
    const r = req('yahoo', 'p2');
    const d = pacer.decide(r, () => woken.push(r.key));
    expect(d).toMatchObject({ kind: 'hold', hold: 'shaping', rule: 'y-stop', holdUntilMs: shaper.actions()[0]!.untilMs });
    // Other providers go on.
    expect(pacer.decide(req('google'), () => {})).toEqual({ kind: 'go' });
    clock.setOffset(61_000);
    shaper.tick();
    expect(woken).toEqual([r.key]);
    expect(pacer.decide(r, () => {})).toEqual({ kind: 'go' });
  });

  it('suspends only the project whose mail drew the answer when the rule says so', () => {
    const { pacer, shaper } = setup();
    shaper.observe({ provider: 'google', projectId: 'p1', response: '421-4.7.26 This mail has been rate limited because it is unauthenticated' });
    expect(shaper.actions()).toMatchObject([{ rule: 'p-stop', provider: 'google', projectId: 'p1' }]);
    expect(pacer.decide(req('google', 'p1'), () => {})).toMatchObject({ kind: 'hold', hold: 'shaping', rule: 'p-stop' });
    expect(pacer.decide(req('google', 'p2'), () => {})).toEqual({ kind: 'go' });
    expect(pacer.decide(req('yahoo', 'p1'), () => {})).toEqual({ kind: 'go' });
  });

  it("takes no project's suspension for mail of no project (it would stop the whole provider)", () => {
    const { pacer, shaper } = setup();
    expect(shaper.observe({ provider: 'google', projectId: '', response: '421-4.7.26 unauthenticated' })).toEqual([]);
    expect(pacer.decide(req('google', 'p1'), () => {})).toEqual({ kind: 'go' });
  });

  it("the operator's suspensions hold as operator:<id>, before a rule's, and a resume wakes the mail", () => {
    const { pacer, holds, shaper } = setup();
    shaper.observe({ provider: 'yahoo', projectId: 'p1', response: '421 [TS03] x' });
    holds.setOperator([{ id: 's1', provider: 'yahoo', projectId: '', untilMs: 0, reason: 'incident' }]);
    const woken: string[] = [];
    const r = req('yahoo');
    expect(pacer.decide(r, () => woken.push(r.key))).toMatchObject({ hold: 'suspended', rule: 'operator:s1', holdUntilMs: 0 });
    // Resumed, but the rule's suspension still holds it: it stays asleep.
    holds.setOperator([]);
    expect(woken).toEqual([]);
    clock.setOffset(61_000);
    shaper.tick();
    expect(woken).toEqual([r.key]);
  });

  it('the actions in force are saved, and those still in force hold again after a restart', async () => {
    const saved: string[] = [];
    const pacer = new Pacer(throttles, () => {});
    const holds = new DeliveryHolds();
    pacer.useHolds(holds);
    const shaper = new Shaper({ rules, pacer, holds, log: quietLog, save: async (json) => void saved.push(json) });
    shaper.observe({ provider: 'yahoo', projectId: 'p1', response: '421 [TS03] x' });
    shaper.observe({ provider: 'google', projectId: 'p1', response: '421 4.7.28 x' });
    expect(saved).toHaveLength(2);

    const again = setup();
    expect(again.shaper.restore(saved.at(-1))).toBe(2);
    expect(again.shaper.actions()).toEqual(shaper.actions());
    expect(again.pacer.effective('google').ratePerMinute).toBe(300);
    expect(again.pacer.decide(req('yahoo'), () => {})).toMatchObject({ hold: 'shaping', rule: 'y-stop' });
    // Ended meanwhile: nothing holds; unreadable: nothing restored.
    clock.setOffset(61_000);
    expect(setup().shaper.restore(saved.at(-1))).toBe(0);
    expect(setup().shaper.restore('{nope')).toBe(0);
    // An end is saved too.
    shaper.tick();
    expect(JSON.parse(saved.at(-1)!)).toEqual([]);
  });

  it('a suspension frees the connection slot a waiting item was handed', () => {
    const pacer = new Pacer({ ...throttles, google: { ...throttles.google, connections: 1 } }, () => {});
    const holds = new DeliveryHolds();
    pacer.useHolds(holds);
    const a = req('google');
    const b = req('google');
    const c = req('google', 'p2');
    expect(pacer.decide(a, () => {})).toEqual({ kind: 'go' });
    const woken: string[] = [];
    expect(pacer.decide(b, () => woken.push('b'))).toMatchObject({ hold: 'limit' });
    expect(pacer.decide(c, () => woken.push('c'))).toMatchObject({ hold: 'limit' });
    pacer.release(a.key);
    expect(woken).toEqual(['b']);
    // b was handed the slot, but its project is suspended now: the slot passes on to c.
    holds.setOperator([{ id: 's', provider: '', projectId: 'p1', untilMs: 0, reason: '' }]);
    expect(pacer.decide(b, () => {})).toMatchObject({ hold: 'suspended' });
    expect(woken).toEqual(['b', 'c']);
    expect(pacer.decide(c, () => {})).toEqual({ kind: 'go' });
  });
});

describe('shaper over Redis', () => {
  const redis = sharedRedis();
  const links: RedisLink[] = [];
  afterEach(async () => {
    for (const l of links.splice(0)) await l.close();
  });
  const link = async () => {
    const l = connectRedis({ redisUrl: redis.url, redisPrefix: redis.prefix }, quietLog);
    links.push(l);
    await until(() => l.up, 5000, 'redis up');
    return l;
  };

  it('an action taken on one gateway holds on another, and on a gateway that starts later', async () => {
    const a = setup(await link());
    const b = setup(await link());
    await a.shaper.start();
    await b.shaper.start();
    // Published, or (b subscribing meanwhile) loaded by b once subscribed.
    a.shaper.observe({ provider: 'yahoo', projectId: 'p1', response: '421 [TS03] deferred' });
    await until(() => b.shaper.actions().length === 1, 5000, 'b applies the action');
    expect(b.shaper.actions()).toMatchObject([{ rule: 'y-stop', provider: 'yahoo' }]);
    expect(b.pacer.decide(req('yahoo'), () => {})).toMatchObject({ hold: 'shaping', rule: 'y-stop' });

    const c = setup(await link());
    await c.shaper.start();
    expect(c.shaper.actions()).toMatchObject([{ rule: 'y-stop', provider: 'yahoo', untilMs: a.shaper.actions()[0]!.untilMs }]);
    // A lowered rate travels with its value.
    a.shaper.observe({ provider: 'google', projectId: 'p1', response: '421 4.7.28 x' });
    await until(() => c.pacer.effective('google').ratePerMinute === 300, 5000, 'c lowers the rate');
    for (const g of [a, b, c]) await g.shaper.close();
  });
});
