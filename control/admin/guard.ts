// The admin listener's one door: the operator's token, compared in constant time, or the console's
// session cookie (control/console/sessions.ts) that the token opened. Wrong tokens are counted per
// source address and logged (never the token), and an address past the limit is refused before its
// token is even looked at; the console's sign-in (control/console/session-routes.ts) counts on the
// same counter. A cookie request that changes something must carry the session's CSRF token, and a
// cookie request from another origin is refused outright.
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../core/errors.js';
import { safeEqual } from '../../core/crypto.js';
import { clock } from '../../core/clock.js';
import type { Logger } from '../../core/log.js';
import type { Counters } from '../limits/counters.js';
import { secondsUntil } from '../limits/rate-limit.js';
import { attachSession, type ConsoleSession, type ConsoleSessions, cookieValue, csrfMatches } from '../console/sessions.js';

export interface AdminGuardOptions {
  token: string;
  counters: Counters;
  log: Logger;
  /** Wrong tokens allowed per address and window before it is refused. */
  failures?: number;
  windowMs?: number;
  onRefused?: (reason: 'token' | 'throttled') => void;
  /** The console's sessions: when given, their cookie is accepted in place of the bearer token. */
  sessions?: ConsoleSessions;
}

export interface AdminGuard {
  (req: FastifyRequest): Promise<void>;
  /** The console's sign-in: the presented token, throttled and counted as a wrong bearer token is. */
  checkToken(req: FastifyRequest, presented: unknown): void;
  /** A cookie request's live session, Origin and (for a change) CSRF token checked; throws otherwise. */
  consoleSession(req: FastifyRequest): ConsoleSession;
}

const SAFE_METHODS = new Set(['GET', 'HEAD']);

/** The listener's own origin as the browser would write it (scheme, host and port of the request). */
export const ownOrigin = (req: FastifyRequest): string => `${req.protocol}://${req.headers.host ?? ''}`;

export function adminGuard({ token, counters, log, failures = 10, windowMs = 60_000, onRefused, sessions }: AdminGuardOptions): AdminGuard {
  const expected = `Bearer ${token}`;

  const throttle = (req: FastifyRequest, now: number): string => {
    const key = `admin-fail:${req.ip}`;
    const seen = counters.hit(key, windowMs, 0, now);
    if (seen.count >= failures) {
      onRefused?.('throttled');
      const wait = String(secondsUntil(seen.resetAt, now));
      throw new ApiError('RATE_LIMIT_EXCEEDED', `Too many wrong admin tokens from this address; try again in ${wait} s`, {}, { 'Retry-After': wait });
    }
    return key;
  };
  const wrong = (req: FastifyRequest, key: string, now: number, presented: boolean): never => {
    const n = counters.hit(key, windowMs, 1, now).count;
    onRefused?.('token');
    log.warn({ ip: req.ip, method: req.method, path: req.url.split('?')[0], failures: n, presented }, 'admin API: wrong or missing token');
    throw new ApiError('UNAUTHORIZED', 'Admin token required');
  };
  const csrf = (message: string): never => {
    throw new ApiError('CSRF_TOKEN_INVALID', message);
  };

  const consoleSession = (req: FastifyRequest): ConsoleSession => {
    const session = sessions?.find(cookieValue(req.headers.cookie));
    // An unknown, signed-out or expired cookie: the value is 256 random bits, so it is no guess to count.
    if (!session) throw new ApiError('UNAUTHORIZED', 'The console session has ended; sign in again');
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== ownOrigin(req)) csrf('Cross-origin requests with the console session are refused');
    if (!SAFE_METHODS.has(req.method) && !csrfMatches(session, req.headers['x-csrf-token'])) csrf('Missing or wrong X-CSRF-Token');
    return session;
  };

  const hook = async (req: FastifyRequest): Promise<void> => {
    const now = clock.now();
    const key = throttle(req, now);
    const auth = req.headers.authorization;
    if (typeof auth === 'string') {
      if (safeEqual(auth, expected)) return;
      return wrong(req, key, now, true);
    }
    if (sessions && cookieValue(req.headers.cookie) !== undefined) {
      attachSession(req, consoleSession(req));
      return;
    }
    return wrong(req, key, now, false);
  };

  const checkToken = (req: FastifyRequest, presented: unknown): void => {
    const now = clock.now();
    const key = throttle(req, now);
    if (typeof presented === 'string' && presented.length > 0 && safeEqual(presented, token)) return;
    wrong(req, key, now, typeof presented === 'string' && presented.length > 0);
  };

  return Object.assign(hook, { checkToken, consoleSession });
}
