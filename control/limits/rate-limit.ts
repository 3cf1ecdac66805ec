// The one fixed-window rate limiter (the HTTP API's request rate, sign-in codes, SMTP
// submission), answered the IETF way: RateLimit-* headers, and past the limit 429
// RATE_LIMIT_EXCEEDED with Retry-After.
import { ApiError } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import type { Config } from '../../core/config.js';
import { limitsOf } from '../plans.js';
import type { Project } from '../store/index.js';
import { memoryCounters, type Counters, type WindowCount } from './counters.js';

export interface RateDecision {
  headers: Record<string, string>;
}

/** The refusal's message, given the seconds until the window ends. */
export type Refusal = (retryAfterSec: number) => string;

/** Whole seconds until `resetAt`, at least 1: what Retry-After and RateLimit-Reset say. */
export const secondsUntil = (resetAt: number, now: number = clock.now()): number => Math.max(1, Math.ceil((resetAt - now) / 1000));

function take(counters: Counters, key: string, limit: number, windowMs: number, refusal: Refusal, by: number): RateDecision {
  const now = clock.now();
  const headersOf = (w: WindowCount) => ({
    'RateLimit-Policy': `${limit};w=${Math.round(windowMs / 1000)}`,
    'RateLimit-Limit': String(limit),
    'RateLimit-Remaining': String(Math.max(0, limit - w.count)),
    'RateLimit-Reset': String(secondsUntil(w.resetAt, now)),
  });
  // A refused event is not counted: with counters shared by several nodes it would take room
  // from the window that nothing used.
  const seen = counters.hit(key, windowMs, 0, now);
  if (seen.count + by > limit) {
    const resetSec = secondsUntil(seen.resetAt, now);
    throw new ApiError('RATE_LIMIT_EXCEEDED', refusal(resetSec), {}, { ...headersOf(seen), 'Retry-After': String(resetSec) });
  }
  return { headers: headersOf(counters.hit(key, windowMs, by, now)) };
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

/** A project's API request rate from its plan: one counter over every door (HTTP and public gRPC). */
export function checkProjectRate(counters: Counters, project: Project, config: Config): RateDecision {
  return checkRate(counters, `api:${project.id}`, limitsOf(project, config).rateLimit);
}
