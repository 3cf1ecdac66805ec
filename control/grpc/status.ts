// ApiError → gRPC status. The API's error code travels in the trailers
// (`x-postgate-code`), with the id of an email recorded as failed
// (`x-postgate-email-id`), so callers branch on the same codes as over REST.
import * as grpc from '@grpc/grpc-js';
import { ApiError } from '../../core/errors.js';

const byHttpStatus: Record<number, grpc.status> = {
  400: grpc.status.INVALID_ARGUMENT,
  401: grpc.status.UNAUTHENTICATED,
  402: grpc.status.FAILED_PRECONDITION,
  403: grpc.status.PERMISSION_DENIED,
  404: grpc.status.NOT_FOUND,
  409: grpc.status.ALREADY_EXISTS,
  413: grpc.status.INVALID_ARGUMENT,
  415: grpc.status.INVALID_ARGUMENT,
  422: grpc.status.FAILED_PRECONDITION,
  429: grpc.status.RESOURCE_EXHAUSTED,
  // Busy, or the store unreachable: nothing was done, the client retries (after `retry-after`).
  503: grpc.status.UNAVAILABLE,
};

export const CODE_KEY = 'x-postgate-code';
export const EMAIL_ID_KEY = 'x-postgate-email-id';

/** The RateLimit-* headers HTTP answers with (control/limits/rate-limit.ts), as metadata of the same names in lower case. */
export function rateMetadata(headers: Record<string, string>, metadata = new grpc.Metadata()): grpc.Metadata {
  for (const [name, value] of Object.entries(headers)) if (/^ratelimit-/i.test(name)) metadata.set(name.toLowerCase(), value);
  return metadata;
}

export function grpcError(err: unknown): Partial<grpc.StatusObject> {
  const e = err instanceof ApiError ? err : new ApiError('INTERNAL', 'Internal error');
  const metadata = new grpc.Metadata();
  metadata.set(CODE_KEY, e.code);
  if (typeof e.extra.id === 'string') metadata.set(EMAIL_ID_KEY, e.extra.id);
  // Seconds, as HTTP's Retry-After (no google.rpc.RetryInfo: its proto is not among ours).
  const retryAfter = e.headers['Retry-After'];
  if (retryAfter) metadata.set('retry-after', retryAfter);
  rateMetadata(e.headers, metadata);
  return { code: byHttpStatus[e.status] ?? grpc.status.INTERNAL, details: e.message, metadata };
}
