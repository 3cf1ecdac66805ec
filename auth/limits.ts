// Rate limits of the auth API (code sends and verifications, by address and
// by client IP). Counters sit behind this one small class, in process memory;
// several control instances would back it with Redis (DESIGN.md).
import { ApiError } from '../core/errors.js';
import { clock } from '../core/clock.js';

interface Window {
  start: number;
  count: number;
}

const SWEEP_EVERY = 10_000;

export class RateLimiter {
  private readonly windows = new Map<string, Window>();
  private calls = 0;

  /**
   * Counts one event for `key` in a fixed window of `windowMs`; over `limit`
   * it throws RATE_LIMIT_EXCEEDED with Retry-After and RateLimit headers.
   */
  take(key: string, limit: number, windowMs: number, what: string): void {
    const now = clock.now();
    if (++this.calls % SWEEP_EVERY === 0) this.sweep(now);
    const id = `${windowMs}:${key}`;
    let w = this.windows.get(id);
    if (!w || now - w.start >= windowMs || now < w.start) {
      w = { start: now, count: 0 };
      this.windows.set(id, w);
    }
    const resetSec = Math.max(1, Math.ceil((w.start + windowMs - now) / 1000));
    if (w.count >= limit) {
      throw new ApiError(
        'RATE_LIMIT_EXCEEDED',
        `Too many ${what}; try again in ${resetSec} s`,
        {},
        {
          'retry-after': String(resetSec),
          'ratelimit-limit': String(limit),
          'ratelimit-remaining': '0',
          'ratelimit-reset': String(resetSec),
        },
      );
    }
    w.count++;
  }

  private sweep(now: number): void {
    for (const [id, w] of this.windows) {
      const windowMs = Number(id.slice(0, id.indexOf(':')));
      if (now - w.start >= windowMs) this.windows.delete(id);
    }
  }
}
