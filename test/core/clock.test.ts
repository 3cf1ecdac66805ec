import { afterEach, describe, expect, it } from 'vitest';
import { clock, DAY_MS, dayOf, dayStart, nextDayStart } from '../../core/clock.js';
import { escapeHtml } from '../../core/html.js';

afterEach(() => clock.setOffset(0));

describe('UTC days', () => {
  it('names the UTC day and finds its midnight, before 1970 too', () => {
    const t = Date.UTC(2026, 10, 25, 23, 59, 59, 999);
    expect(dayOf(t)).toBe('2026-11-25');
    expect(dayStart(t)).toBe(Date.UTC(2026, 10, 25));
    expect(nextDayStart(t)).toBe(Date.UTC(2026, 10, 26));
    expect(dayStart(Date.UTC(2026, 10, 26))).toBe(Date.UTC(2026, 10, 26));
    expect(dayStart(-1)).toBe(-DAY_MS);
  });

  it('names each day right when asked about the same day again and across midnights, in any order', () => {
    const mid = Date.UTC(2026, 10, 26);
    const cases = [mid - 1, mid, mid + 1, mid - 1, mid + DAY_MS - 1, mid + DAY_MS, mid, -1, 0, Date.UTC(1969, 11, 31, 12), mid - DAY_MS];
    for (const t of cases) expect(dayOf(t)).toBe(new Date(t).toISOString().slice(0, 10));
    expect(() => dayOf(Number.NaN)).toThrow(RangeError);
  });

  it('moves every reader of the clock when a test moves it', () => {
    const before = clock.now();
    clock.setOffset(DAY_MS);
    expect(clock.now() - before).toBeGreaterThanOrEqual(DAY_MS);
    expect(clock.day()).toBe(dayOf(before + DAY_MS));
  });
});

describe('escapeHtml', () => {
  it('leaves no markup or attribute break in text', () => {
    expect(escapeHtml(`<a href="x" onclick='y'>&</a>`)).toBe('&#60;a href=&#34;x&#34; onclick=&#39;y&#39;&#62;&#38;&#60;/a&#62;');
  });
});
