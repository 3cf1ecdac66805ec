// Warm-up arithmetic shared by the gateway (which holds bulk mail over the norm) and
// control (which shows it in GET /v1/pacing). Days are UTC calendar days.
import { DAY_MS, dayStart } from '../core/clock.js';
import type { ProviderThrottle } from '../core/config.js';

/** 1 on the project's first sending day (also when it has none yet), 2 the next day, ... */
export function warmupDay(startMs: number, nowMs: number): number {
  if (!startMs || startMs > nowMs) return 1;
  return Math.floor((dayStart(nowMs) - dayStart(startMs)) / DAY_MS) + 1;
}

/** A project's daily norm at a provider on warm-up day n; Infinity when there is none. */
export function normFor(t: Pick<ProviderThrottle, 'dailyNorm' | 'growth' | 'maxDailyNorm'>, day: number): number {
  if (!t.dailyNorm) return Infinity;
  const grown = t.dailyNorm * Math.max(1, t.growth || 1) ** Math.max(0, day - 1);
  const capped = t.maxDailyNorm ? Math.min(t.maxDailyNorm, grown) : grown;
  return Math.max(1, Math.floor(Math.min(capped, Number.MAX_SAFE_INTEGER)));
}
