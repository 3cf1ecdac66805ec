// Every failure of a call, from the API ({error, code}) or the network, is a PostgateError.

export class PostgateError extends Error {
  override readonly name = 'PostgateError';

  constructor(
    /** The API's code (INVALID_CODE, CODE_EXPIRED, TOO_MANY_ATTEMPTS, SESSION_INVALID, …), or NETWORK_ERROR / OAUTH_ERROR from the SDK itself. */
    readonly code: string,
    message: string,
    /** HTTP status; 0 when no answer arrived. */
    readonly status: number,
    /** Seconds to wait, from Retry-After (rate limits). */
    readonly retryAfter: number | null = null,
    /** The error answer's other fields (TWO_FACTOR_REQUIRED: pendingToken, methods, enrol, expiresAt; read with pendingOf). */
    readonly details: Record<string, unknown> | null = null,
  ) {
    super(message);
  }
}

/** Whatever was thrown, as a PostgateError. */
export function toPostgateError(err: unknown): PostgateError {
  if (err instanceof PostgateError) return err;
  return new PostgateError('INTERNAL', err instanceof Error ? err.message : String(err), 0);
}
