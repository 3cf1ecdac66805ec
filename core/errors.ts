// The one error type. Every refusal a user can see is an ApiError and is
// answered as {error, code} with its HTTP status.
export type ErrorCode =
  | 'INVALID_REQUEST'
  | 'INVALID_API_KEY'
  | 'NOT_FOUND'
  | 'RATE_LIMIT_EXCEEDED'
  | 'DOMAIN_NOT_VERIFIED'
  | 'SUBSCRIPTION_REQUIRED'
  | 'SENDING_PAUSED'
  | 'QUOTA_EXCEEDED'
  | 'BULK_LIMIT_EXCEEDED'
  | 'RECIPIENT_IN_SUPPRESSION_LIST'
  | 'INVALID_CODE'
  | 'CODE_EXPIRED'
  | 'TOO_MANY_ATTEMPTS'
  | 'TOO_MANY_PENDING_SIGN_INS'
  | 'SESSION_INVALID'
  | 'REDIRECT_NOT_ALLOWED'
  | 'PROVIDER_NOT_ENABLED'
  | 'INVALID_CREDENTIAL'
  | 'REGION_NOT_ALLOWED'
  | 'USER_BANNED'
  | 'TWO_FACTOR_REQUIRED'
  | 'CONFLICT'
  | 'IDEMPOTENCY_CONFLICT'
  | 'IDEMPOTENCY_IN_PROGRESS'
  | 'BATCH_INVALID'
  | 'TEMPLATE_INVALID'
  | 'UNAUTHORIZED'
  | 'CSRF_TOKEN_INVALID'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'SERVER_BUSY'
  | 'STORE_UNAVAILABLE'
  | 'INTERNAL';

export const statusOf: Record<ErrorCode, number> = {
  INVALID_REQUEST: 400,
  INVALID_API_KEY: 401,
  NOT_FOUND: 404,
  RATE_LIMIT_EXCEEDED: 429,
  DOMAIN_NOT_VERIFIED: 403,
  SUBSCRIPTION_REQUIRED: 402,
  SENDING_PAUSED: 403,
  QUOTA_EXCEEDED: 429,
  BULK_LIMIT_EXCEEDED: 429,
  RECIPIENT_IN_SUPPRESSION_LIST: 422,
  INVALID_CODE: 400,
  CODE_EXPIRED: 400,
  TOO_MANY_ATTEMPTS: 429,
  TOO_MANY_PENDING_SIGN_INS: 429,
  SESSION_INVALID: 401,
  REDIRECT_NOT_ALLOWED: 400,
  PROVIDER_NOT_ENABLED: 400,
  INVALID_CREDENTIAL: 401,
  REGION_NOT_ALLOWED: 403,
  // A banned user's sign-in (auth/users): the answer says so, with the end of the ban when it has one.
  USER_BANNED: 403,
  // A sign-in held for its second factor (auth/two-factor): the answer carries the pending ticket.
  TWO_FACTOR_REQUIRED: 401,
  CONFLICT: 409,
  IDEMPOTENCY_CONFLICT: 409,
  IDEMPOTENCY_IN_PROGRESS: 409,
  BATCH_INVALID: 422,
  // A send naming a template it cannot render (unknown, unpublished, variables missing or of the wrong type).
  TEMPLATE_INVALID: 422,
  UNAUTHORIZED: 401,
  CSRF_TOKEN_INVALID: 403,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  SERVER_BUSY: 503,
  STORE_UNAVAILABLE: 503,
  INTERNAL: 500,
};

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Extra fields of the answer, e.g. the id of an email recorded as failed. */
  readonly extra: Record<string, unknown>;
  /** Response headers, e.g. Retry-After. */
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = statusOf[code];
    this.extra = extra;
    this.headers = headers;
  }

  toJSON(): Record<string, unknown> {
    return { ...errorBody(this.code, this.message), ...this.extra };
  }
}

// Resend's error names, so its SDK and code written against it read our errors; codes
// without a Resend equivalent get their own name in the same snake_case style.
const resendNames: Partial<Record<ErrorCode, string>> = {
  INVALID_REQUEST: 'validation_error',
  BATCH_INVALID: 'validation_error',
  TEMPLATE_INVALID: 'validation_error',
  INVALID_API_KEY: 'invalid_api_key',
  UNAUTHORIZED: 'missing_api_key',
  DOMAIN_NOT_VERIFIED: 'validation_error',
  // Resend has no name for a state conflict (canceling an email already sent, a domain added twice): it
  // answers validation_error whatever the status, so its SDK's ErrorResponse type holds ours.
  CONFLICT: 'validation_error',
  QUOTA_EXCEEDED: 'monthly_quota_exceeded',
  INTERNAL: 'internal_server_error',
  IDEMPOTENCY_CONFLICT: 'invalid_idempotent_request',
  IDEMPOTENCY_IN_PROGRESS: 'concurrent_idempotent_requests',
};

/**
 * The one error body: the spec's {error, code}, and beside them Resend's
 * {name, message, statusCode} (a superset: clients of either read it).
 */
export function errorBody(code: ErrorCode, message: string): { error: string; code: ErrorCode; name: string; message: string; statusCode: number } {
  return { error: message, code, name: resendNames[code] ?? code.toLowerCase(), message, statusCode: statusOf[code] };
}

export const invalid = (message: string): ApiError => new ApiError('INVALID_REQUEST', message);
export const notFound = (what = 'Not found'): ApiError => new ApiError('NOT_FOUND', what);

/**
 * The store's database cannot be reached (a network database lost mid-run): nothing was
 * recorded, or its commit could not be confirmed. Answered 503 with Retry-After over HTTP,
 * 451 4.3.0 over SMTP and UNAVAILABLE over gRPC, so clients retry rather than give up.
 */
export class StoreUnavailableError extends ApiError {
  constructor(cause?: unknown) {
    super('STORE_UNAVAILABLE', 'The database is unavailable; try again shortly', {}, { 'Retry-After': '2' });
    this.name = 'StoreUnavailableError';
    if (cause !== undefined) this.cause = cause;
  }
}

/**
 * Text the database cannot store: PostgreSQL refuses a NUL (U+0000) in text and jsonb values. Every
 * door refuses NUL before the store (core/nul.ts); this is the last line, 400 rather than 500.
 */
export class UnstorableTextError extends ApiError {
  constructor(cause?: unknown) {
    super('INVALID_REQUEST', 'Text must not contain the NUL character (U+0000)');
    this.name = 'UnstorableTextError';
    if (cause !== undefined) this.cause = cause;
  }
}
