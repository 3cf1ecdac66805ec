// gateway/pacing/pacer.ts, the pacer's decisions without processes: bulk held over the day's
// warm-up norm, scheduled retries, connections per provider, the rate per minute. Shared pacing
// over Redis is in test/gateway/pacing-shared.test.ts.
import { describe, expect, it } from 'vitest';
import { clock, dayOf, nextDayStart } from '../../../core/clock.js';
import { Pacer, type PaceRequest } from '../../../gateway/pacing/pacer.js';

describe('pacer', () => {
  const throttle = (p: Partial<{ dailyNorm: number; ratePerMinute: number; connections: number }>) => ({
    google: { dailyNorm: p.dailyNorm ?? 0, growth: 2, maxDailyNorm: 0, ratePerMinute: p.ratePerMinute ?? 0, connections: p.connections ?? 0 },
    other: { dailyNorm: 0, growth: 1, maxDailyNorm: 0, ratePerMinute: 0, connections: 0 },
  });
  const req = (key: string, over: Partial<PaceRequest> = {}): PaceRequest => ({
    key,
    projectId: 'p1',
    bulk: true,
    domain: 'gmail.com',
    provider: 'google',
    recipients: 1,
    warmupStartMs: 0,
    notBeforeMs: 0,
    ...over,
  });

  it("holds bulk over the day's norm until the next UTC day, never transactional; a new day lets it go", () => {
    const persisted: unknown[] = [];
    const pacer = new Pacer(throttle({ dailyNorm: 2 }), (rows) => persisted.push(...rows));
    const woken: string[] = [];
    const wake = (k: string) => () => woken.push(k);
    expect(pacer.decide(req('t1', { bulk: false }), wake('t1'))).toEqual({ kind: 'go' });
    expect(pacer.decide(req('b1'), wake('b1'))).toEqual({ kind: 'go' });
    const held = pacer.decide(req('b2'), wake('b2'));
    expect(held).toMatchObject({ kind: 'hold', hold: 'warmup', untilMs: nextDayStart(clock.now()), norm: 2, used: 2 });
    expect(pacer.decide(req('t2', { bulk: false }), wake('t2'))).toEqual({ kind: 'go' });
    expect(pacer.stats('p1', dayOf(clock.now()))).toEqual([{ provider: 'google', transactional: 2, bulk: 1, heldBulk: 1 }]);
    expect(persisted).toHaveLength(3);
    // Another project has its own budget.
    expect(pacer.decide(req('x1', { projectId: 'p2' }), wake('x1'))).toEqual({ kind: 'go' });

    const offset = clock.offset();
    try {
      clock.setOffset(nextDayStart(clock.now()) - Date.now() + 1000);
      expect(pacer.reconsider()).toBe(1);
      expect(woken).toEqual(['b2']);
      // Day 2 (growth 2): the norm is 4, counted afresh.
      expect(pacer.decide(req('b2'), wake('b2'))).toEqual({ kind: 'go' });
    } finally {
      clock.setOffset(offset);
    }
  });

  it('raising the norm releases held bulk at once', () => {
    const pacer = new Pacer(throttle({ dailyNorm: 1 }), () => {});
    const woken: string[] = [];
    pacer.decide(req('a'), () => woken.push('a'));
    expect(pacer.decide(req('b'), () => woken.push('b'))).toMatchObject({ hold: 'warmup' });
    pacer.setThrottles([{ provider: 'google', dailyNorm: 10, growth: 1, maxDailyNorm: 0, ratePerMinute: 0, connections: 0 }]);
    expect(woken).toEqual(['b']);
  });

  it('keeps a scheduled retry until it is due', () => {
    const pacer = new Pacer(throttle({}), () => {});
    const d = pacer.decide(req('r', { notBeforeMs: clock.now() + 90_000 }), () => {});
    expect(d).toMatchObject({ kind: 'hold', hold: 'retry' });
    expect((d as { delaySec: number }).delaySec).toBeGreaterThanOrEqual(89);
  });

  it("send-now wakes the provider's or project's scheduled retries once, still within the limits; other holds stay", () => {
    const pacer = new Pacer(throttle({ dailyNorm: 1 }), () => {});
    const woken: string[] = [];
    const later = clock.now() + 3600_000;
    pacer.decide(req('r1', { notBeforeMs: later, bulk: false }), () => woken.push('r1'));
    pacer.decide(req('r2', { notBeforeMs: later, bulk: false, projectId: 'p2' }), () => woken.push('r2'));
    pacer.decide(req('r3', { notBeforeMs: later, bulk: false, provider: 'other', domain: 'x.test' }), () => woken.push('r3'));
    pacer.decide(req('b1'), () => {});
    expect(pacer.decide(req('b2'), () => woken.push('b2'))).toMatchObject({ hold: 'warmup' });
    expect(pacer.sendNow('google', 'p1')).toBe(1);
    expect(woken).toEqual(['r1']);
    // Back through decide: its not_before is ignored this once.
    expect(pacer.decide(req('r1', { notBeforeMs: later, bulk: false }), () => {})).toEqual({ kind: 'go' });
    expect(pacer.decide(req('r1', { notBeforeMs: later, bulk: false }), () => woken.push('r1 again'))).toMatchObject({ hold: 'retry' });
    // Every provider and project; the warm-up hold stays.
    expect(pacer.sendNow('', '')).toBe(3);
    expect(woken.sort()).toEqual(['r1', 'r1 again', 'r2', 'r3']);
  });

  it('a dropped item leaves its wait: the freed slot goes to the next one, not to it', () => {
    const pacer = new Pacer(throttle({ connections: 1 }), () => {});
    const woken: string[] = [];
    pacer.decide(req('first'), () => woken.push('first'));
    pacer.decide(req('dropped', { bulk: false }), () => woken.push('dropped'));
    pacer.decide(req('next'), () => woken.push('next'));
    pacer.forget('dropped');
    pacer.release('first');
    expect(woken).toEqual(['next']);
    expect(pacer.decide(req('next'), () => {})).toEqual({ kind: 'go' });
    // Dropped after a slot was handed to it: the slot frees for the next one.
    pacer.decide(req('late'), () => woken.push('late'));
    pacer.decide(req('after'), () => woken.push('after'));
    pacer.done('next');
    expect(woken).toEqual(['next', 'late']);
    pacer.forget('late');
    expect(woken).toEqual(['next', 'late', 'after']);
  });

  it('caps connections per provider and hands a freed slot to transactional mail first', () => {
    const pacer = new Pacer(throttle({ connections: 1 }), () => {});
    const woken: string[] = [];
    expect(pacer.decide(req('first'), () => woken.push('first'))).toEqual({ kind: 'go' });
    expect(pacer.decide(req('bulk'), () => woken.push('bulk'))).toMatchObject({ kind: 'hold', hold: 'limit', waitedMs: expect.any(Number) });
    expect(pacer.decide(req('trans', { bulk: false }), () => woken.push('trans'))).toMatchObject({ kind: 'hold', hold: 'limit' });
    pacer.release('first');
    expect(woken).toEqual(['trans']);
    // The woken item comes back through decide() and finds its reserved slot.
    expect(pacer.decide(req('trans', { bulk: false }), () => {})).toEqual({ kind: 'go' });
    pacer.done('trans');
    expect(woken).toEqual(['trans', 'bulk']);
  });

  it('paces to the rate per minute', () => {
    const pacer = new Pacer(throttle({ ratePerMinute: 60 }), () => {});
    expect(pacer.decide(req('a', { bulk: false }), () => {})).toEqual({ kind: 'go' });
    expect(pacer.decide(req('b', { bulk: false }), () => {})).toMatchObject({ kind: 'hold', hold: 'limit' });
  });

  it("shaping's overlay lowers a provider's rate at once (saved tokens dropped) and its connections, and the configured limits come back", () => {
    const pacer = new Pacer(throttle({ ratePerMinute: 600, connections: 3 }), () => {});
    const t = { kind: 'hold', hold: 'limit' };
    // 600 a minute: a burst of 10 tokens saved up.
    for (const k of ['a', 'b']) expect(pacer.decide(req(k, { bulk: false }), () => {})).toEqual({ kind: 'go' });
    pacer.setShapingLimit('google', 'rule|google|', { rate: 60, untilMs: clock.now() + 60_000 });
    expect(pacer.effective('google')).toMatchObject({ ratePerMinute: 60, connections: 3 });
    // A slot is free, but the next attempt already waits for a token of the new rate.
    expect(pacer.connectionRoom('google', 'gmail.com').free).toBe(1);
    expect(pacer.decide(req('c', { bulk: false }), () => {})).toMatchObject(t);
    pacer.setShapingLimit('google', 'rule|google|', { rate: 60, connections: 2, untilMs: clock.now() + 60_000 });
    expect(pacer.throttleOf('google')).toMatchObject({ ratePerMinute: 600, connections: 3 });
    expect(pacer.connectionRoom('google', 'gmail.com').free).toBe(0);
    // The lowest of several actions applies; a lower configured limit stays.
    pacer.setShapingLimit('google', 'other|google|', { connections: 5, untilMs: clock.now() + 60_000 });
    expect(pacer.effective('google')).toMatchObject({ ratePerMinute: 60, connections: 2 });
    pacer.setShapingLimit('google', 'rule|google|', undefined);
    expect(pacer.effective('google')).toMatchObject({ ratePerMinute: 600, connections: 3 });
    // An action whose end our clock has passed no longer counts.
    pacer.setShapingLimit('google', 'late|google|', { rate: 1, untilMs: clock.now() + 1000 });
    const offset = clock.offset();
    try {
      clock.setOffset(offset + 2000);
      expect(pacer.effective('google').ratePerMinute).toBe(600);
    } finally {
      clock.setOffset(offset);
    }
  });
});
