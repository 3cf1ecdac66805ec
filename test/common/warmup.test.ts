// common/warmup.ts: warm-up days counted from the first sending day (UTC) and the daily norm
// growing per day up to its cap.
import { describe, expect, it } from 'vitest';
import { normFor, warmupDay } from '../../common/warmup.js';
import { dayOf, nextDayStart } from '../../core/clock.js';

describe('warm-up', () => {
  it('counts days from the first sending day (UTC) and grows the norm per day up to its cap', () => {
    const start = Date.parse('2026-03-01T15:00:00Z');
    expect(warmupDay(0, start)).toBe(1);
    expect(warmupDay(start, Date.parse('2026-03-01T23:59:59Z'))).toBe(1);
    expect(warmupDay(start, Date.parse('2026-03-02T00:00:00Z'))).toBe(2);
    expect(warmupDay(start, Date.parse('2026-03-11T08:00:00Z'))).toBe(11);
    const t = { dailyNorm: 100, growth: 1.5, maxDailyNorm: 400 };
    expect([1, 2, 3, 4, 5].map((d) => normFor(t, d))).toEqual([100, 150, 225, 337, 400]);
    expect(normFor({ dailyNorm: 0, growth: 2, maxDailyNorm: 0 }, 3)).toBe(Infinity);
    expect(nextDayStart(Date.parse('2026-03-01T15:00:00Z'))).toBe(Date.parse('2026-03-02T00:00:00Z'));
    expect(dayOf(Date.parse('2026-03-01T23:00:00Z'))).toBe('2026-03-01');
  });
});
