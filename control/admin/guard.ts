// The admin listener's one door: the operator's token, compared in constant time.
// Wrong tokens are counted per source address and logged (never the token), and an
// address past the limit is refused before its token is even looked at.
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../core/errors.js';
import { safeEqual } from '../../core/crypto.js';
import { clock } from '../../core/clock.js';
import type { Logger } from '../../core/log.js';
import type { Counters } from '../limits/counters.js';
import { secondsUntil } from '../limits/rate-limit.js';

export interface AdminGuardOptions {
  token: string;
  counters: Counters;
  log: Logger;
  /** Wrong tokens allowed per address and window before it is refused. */
  failures?: number;
  windowMs?: number;
  onRefused?: (reason: 'token' | 'throttled') => void;
}

export function adminGuard({ token, counters, log, failures = 10, windowMs = 60_000, onRefused }: AdminGuardOptions) {
  const expected = `Bearer ${token}`;
  return async (req: FastifyRequest): Promise<void> => {
    const key = `admin-fail:${req.ip}`;
    const now = clock.now();
    const seen = counters.hit(key, windowMs, 0, now);
    if (seen.count >= failures) {
      onRefused?.('throttled');
      const wait = String(secondsUntil(seen.resetAt, now));
      throw new ApiError('RATE_LIMIT_EXCEEDED', `Too many wrong admin tokens from this address; try again in ${wait} s`, {}, { 'Retry-After': wait });
    }
    const auth = req.headers.authorization;
    if (typeof auth === 'string' && safeEqual(auth, expected)) return;
    const n = counters.hit(key, windowMs, 1, now).count;
    onRefused?.('token');
    log.warn(
      { ip: req.ip, method: req.method, path: req.url.split('?')[0], failures: n, presented: typeof auth === 'string' },
      'admin API: wrong or missing token',
    );
    throw new ApiError('UNAUTHORIZED', 'Admin token required');
  };
}
