// Per-project request rate, answered the IETF way: RateLimit-* headers on every
// answer and 429 RATE_LIMIT_EXCEEDED with Retry-After when over.
import { ApiError } from '../../core/errors.js';
import type { Counters } from './counters.js';

export interface RateDecision {
  headers: Record<string, string>;
}

export function checkRate(counters: Counters, key: string, limit: number, windowMs = 1000, by = 1): RateDecision {
  const now = Date.now();
  const w = counters.hit(key, windowMs, by, now);
  const resetSec = Math.max(1, Math.ceil((w.resetAt - now) / 1000));
  const headers = {
    'RateLimit-Policy': `${limit};w=${Math.round(windowMs / 1000)}`,
    'RateLimit-Limit': String(limit),
    'RateLimit-Remaining': String(Math.max(0, limit - w.count)),
    'RateLimit-Reset': String(resetSec),
  };
  if (w.count > limit) {
    throw new ApiError('RATE_LIMIT_EXCEEDED', `Rate limit of ${limit} requests per second exceeded`, {}, { ...headers, 'Retry-After': String(resetSec) });
  }
  return { headers };
}
