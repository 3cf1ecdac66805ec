// What auth needs of control's one fixed-window limiter (control/limits/), which it may not
// import: its own module, so codes and sign-in events share it without importing each other.

/**
 * The fixed-window limiter control passes in: counts one event for `key`, and past `limit`
 * in the window throws RATE_LIMIT_EXCEEDED (with Retry-After) worded by `refusal`.
 */
export interface Limiter {
  take(key: string, limit: number, windowMs: number, refusal: (retryAfterSec: number) => string): unknown;
}
