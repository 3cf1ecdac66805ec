// The one fixed-window rate limiter (the HTTP API's request rate, sign-in codes, SMTP
// submission), answered the IETF way: RateLimit-* headers, and past the limit 429
// RATE_LIMIT_EXCEEDED with Retry-After.
import { ApiError } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import { memoryCounters, type Counters } from './counters.js';

export interface RateDecision {
  headers: Record<string, string>;
}

/** The refusal's message, given the seconds until the window ends. */
export type Refusal = (retryAfterSec: number) => string;

/** Whole seconds until `resetAt`, at least 1: what Retry-After and RateLimit-Reset say. */
export const secondsUntil = (resetAt: number, now: number = clock.now()): number => Math.max(1, Math.ceil((resetAt - now) / 1000));

function take(counters: Counters, key: string, limit: number, windowMs: number, refusal: Refusal, by: number): RateDecision {
  const now = clock.now();
  const w = counters.hit(key, windowMs, by, now);
  const resetSec = secondsUntil(w.resetAt, now);
  const headers = {
    'RateLimit-Policy': `${limit};w=${Math.round(windowMs / 1000)}`,
    'RateLimit-Limit': String(limit),
    'RateLimit-Remaining': String(Math.max(0, limit - w.count)),
    'RateLimit-Reset': String(resetSec),
  };
  if (w.count > limit) throw new ApiError('RATE_LIMIT_EXCEEDED', refusal(resetSec), {}, { ...headers, 'Retry-After': String(resetSec) });
  return { headers };
}

export class RateLimiter {
  constructor(readonly counters: Counters = memoryCounters()) {}

  /**
   * Counts `by` events for `key` in a fixed window of `windowMs`. Within `limit` it returns the
   * RateLimit headers of the answer; past it, it throws RATE_LIMIT_EXCEEDED with them and Retry-After.
   */
  take(key: string, limit: number, windowMs: number, refusal: Refusal, by = 1): RateDecision {
    return take(this.counters, key, limit, windowMs, refusal, by);
  }
}

/** The HTTP API's per-project request rate (a window of one second unless given). */
export function checkRate(counters: Counters, key: string, limit: number, windowMs = 1000, by = 1): RateDecision {
  return take(counters, key, limit, windowMs, () => `Rate limit of ${limit} requests per second exceeded`, by);
}
