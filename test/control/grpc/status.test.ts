// control/grpc/status.ts: an ApiError as a gRPC status: the status that matches its HTTP one, and
// the API's code, the failed email's id, Retry-After and the RateLimit figures in the trailers.
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { CODE_KEY, EMAIL_ID_KEY, grpcError, rateMetadata } from '../../../control/grpc/status.js';
import { ApiError, StoreUnavailableError, type ErrorCode } from '../../../core/errors.js';

describe('grpcError', () => {
  it.each([
    ['INVALID_REQUEST', grpc.status.INVALID_ARGUMENT],
    ['INVALID_API_KEY', grpc.status.UNAUTHENTICATED],
    ['SUBSCRIPTION_REQUIRED', grpc.status.FAILED_PRECONDITION],
    ['DOMAIN_NOT_VERIFIED', grpc.status.PERMISSION_DENIED],
    ['NOT_FOUND', grpc.status.NOT_FOUND],
    ['CONFLICT', grpc.status.ALREADY_EXISTS],
    ['PAYLOAD_TOO_LARGE', grpc.status.INVALID_ARGUMENT],
    ['RECIPIENT_IN_SUPPRESSION_LIST', grpc.status.FAILED_PRECONDITION],
    ['RATE_LIMIT_EXCEEDED', grpc.status.RESOURCE_EXHAUSTED],
    ['SERVER_BUSY', grpc.status.UNAVAILABLE],
    ['INTERNAL', grpc.status.INTERNAL],
  ] as Array<[ErrorCode, grpc.status]>)('%s → %s', (code, status) => {
    const s = grpcError(new ApiError(code, 'why'));
    expect(s.code).toBe(status);
    expect(s.details).toBe('why');
    expect(s.metadata!.get(CODE_KEY)).toEqual([code]);
  });

  it('the failed email’s id, Retry-After and RateLimit-* travel in the metadata', () => {
    const e = new ApiError(
      'RATE_LIMIT_EXCEEDED',
      'slow down',
      { id: 'e-1' },
      { 'Retry-After': '3', 'RateLimit-Limit': '10', 'RateLimit-Remaining': '0', Other: 'x' },
    );
    const md = grpcError(e).metadata!;
    expect(md.get(EMAIL_ID_KEY)).toEqual(['e-1']);
    expect(md.get('retry-after')).toEqual(['3']);
    expect(md.get('ratelimit-limit')).toEqual(['10']);
    expect(md.get('ratelimit-remaining')).toEqual(['0']);
    expect(md.get('other')).toEqual([]);
    expect(grpcError(new StoreUnavailableError()).metadata!.get('retry-after')).toEqual(['2']);
  });

  it('anything but an ApiError is INTERNAL, saying nothing of it', () => {
    const s = grpcError(new Error('database file is corrupt at /var/lib/x'));
    expect(s).toMatchObject({ code: grpc.status.INTERNAL, details: 'Internal error' });
    expect(s.metadata!.get(CODE_KEY)).toEqual(['INTERNAL']);
  });
});

it('rateMetadata keeps only the RateLimit headers, in lower case', () => {
  const md = rateMetadata({ 'RateLimit-Policy': '10;w=1', 'Retry-After': '1' });
  expect(md.getMap()).toEqual({ 'ratelimit-policy': '10;w=1' });
});
