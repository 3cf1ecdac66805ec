import { afterEach, describe, expect, it } from 'vitest';
import { clock } from '../../../core/clock.js';
import type { ApiError } from '../../../core/errors.js';
import { memoryCounters } from '../../../control/limits/counters.js';
import { checkRate, RateLimiter } from '../../../control/limits/rate-limit.js';

afterEach(() => clock.setOffset(0));

describe('the fixed-window limiter', () => {
  it('counts within the window, refuses past the limit with Retry-After, and opens a new window after it', () => {
    const limiter = new RateLimiter();
    const refuse = (s: number) => `wait ${s} s`;
    for (let i = 1; i <= 3; i++) expect(limiter.take('k', 3, 60_000, refuse).headers['RateLimit-Remaining']).toBe(String(3 - i));
    let refused: ApiError | undefined;
    try {
      limiter.take('k', 3, 60_000, refuse);
    } catch (err) {
      refused = err as ApiError;
    }
    expect(refused?.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(refused?.message).toBe('wait 60 s');
    expect(refused?.headers?.['Retry-After']).toBe('60');
    expect(limiter.take('other', 3, 60_000, refuse).headers['RateLimit-Remaining']).toBe('2');
    clock.setOffset(60_000);
    expect(limiter.take('k', 3, 60_000, refuse).headers['RateLimit-Remaining']).toBe('2');
  });

  it('a look (by 0) counts nothing and opens no window', () => {
    const counters = memoryCounters();
    expect(counters.hit('x', 1000, 0).count).toBe(0);
    expect(counters.hit('x', 1000).count).toBe(1);
    expect(counters.hit('x', 1000, 0).count).toBe(1);
  });

  it('the API rate speaks per second', () => {
    const counters = memoryCounters();
    expect(checkRate(counters, 'p', 1).headers['RateLimit-Policy']).toBe('1;w=1');
    expect(() => checkRate(counters, 'p', 1)).toThrow('Rate limit of 1 requests per second exceeded');
  });
});
