// gateway/shaping/holds.ts: which suspension stops a provider's mail of a project now (the
// operator's before a rule's, then the one that ends last; none once ended or lifted), and the
// listeners told at each change and when a hold's time runs out.
import { afterEach, describe, expect, it } from 'vitest';
import { clock } from '../../../core/clock.js';
import { DeliveryHolds } from '../../../gateway/shaping/holds.js';
import { until } from '../../helpers/until.js';

afterEach(() => clock.setOffset(0));

const shaping = (over: Partial<Parameters<DeliveryHolds['setShaping']>[1] & object> = {}) => ({
  cause: 'shaping' as const,
  rule: 'r',
  provider: 'google',
  projectId: '',
  untilMs: clock.now() + 60_000,
  sinceMs: clock.now(),
  reason: '421 4.7.28',
  ...over,
});

describe('delivery holds', () => {
  it("covers a provider for every project or one project; the operator's outranks a rule's", () => {
    const holds = new DeliveryHolds();
    expect(holds.check('google', 'p1')).toBeUndefined();
    holds.setShaping('r|google|p1', shaping({ projectId: 'p1' }));
    expect(holds.check('google', 'p1')).toMatchObject({ cause: 'shaping', rule: 'r' });
    expect(holds.check('google', 'p2')).toBeUndefined();
    expect(holds.check('yahoo', 'p1')).toBeUndefined();
    // An operator's suspension of a project at every provider, until resumed.
    holds.setOperator([{ id: 's1', provider: '', projectId: 'p1', untilMs: 0, reason: 'leaked key' }]);
    expect(holds.check('google', 'p1')).toMatchObject({ cause: 'suspended', rule: 'operator:s1', untilMs: 0, reason: 'leaked key' });
    expect(holds.check('yahoo', 'p1')).toMatchObject({ rule: 'operator:s1' });
    holds.setOperator([]);
    expect(holds.check('google', 'p1')).toMatchObject({ rule: 'r' });
    expect(holds.list()).toHaveLength(1);
  });

  it('of several rules, the one that ends last; an ended one holds nothing', () => {
    const holds = new DeliveryHolds();
    holds.setShaping('a', shaping({ rule: 'a', untilMs: clock.now() + 10_000 }));
    holds.setShaping('b', shaping({ rule: 'b', untilMs: clock.now() + 20_000 }));
    expect(holds.check('google', 'p')?.rule).toBe('b');
    clock.setOffset(30_000);
    expect(holds.check('google', 'p')).toBeUndefined();
    expect(holds.list()).toEqual([]);
  });

  it('tells its listeners at each change and when a hold runs out', async () => {
    const holds = new DeliveryHolds();
    let told = 0;
    holds.onChange(() => told++);
    holds.setShaping('a', shaping({ untilMs: clock.now() + 50 }));
    expect(told).toBe(1);
    await until(() => told === 2, 2000, 'told at the end');
    expect(holds.check('google', 'p')).toBeUndefined();
    // Lifting what is not there tells no one.
    holds.setShaping('a', undefined);
    expect(told).toBe(2);
    holds.setOperator([{ id: 'x', provider: 'google', projectId: '', untilMs: 0, reason: '' }]);
    expect(told).toBe(3);
  });
});
