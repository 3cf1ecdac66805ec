// core/errors.ts: the one error type and the one error body ({error, code} and, beside them,
// Resend's {name, message, statusCode}), with the status every code answers.
import { describe, expect, it } from 'vitest';
import { ApiError, errorBody, invalid, notFound, StoreUnavailableError, statusOf, UnstorableTextError, type ErrorCode } from '../../core/errors.js';

describe('ApiError', () => {
  it('carries its code, its status, extra fields and headers; its JSON is the one body plus the extras', () => {
    const e = new ApiError('RECIPIENT_IN_SUPPRESSION_LIST', 'All recipients are suppressed', { id: 'e1' }, { 'X-A': '1' });
    expect(e).toBeInstanceOf(Error);
    expect(e).toMatchObject({
      name: 'ApiError',
      code: 'RECIPIENT_IN_SUPPRESSION_LIST',
      status: 422,
      message: 'All recipients are suppressed',
      headers: { 'X-A': '1' },
    });
    expect(JSON.parse(JSON.stringify(e))).toEqual({
      error: 'All recipients are suppressed',
      code: 'RECIPIENT_IN_SUPPRESSION_LIST',
      name: 'recipient_in_suppression_list',
      message: 'All recipients are suppressed',
      statusCode: 422,
      id: 'e1',
    });
  });

  it('invalid and notFound', () => {
    expect(invalid('bad')).toMatchObject({ code: 'INVALID_REQUEST', status: 400, message: 'bad' });
    expect(notFound()).toMatchObject({ code: 'NOT_FOUND', status: 404, message: 'Not found' });
  });
});

describe('errorBody', () => {
  it('uses Resend’s names where Resend has one, so its SDK reads our errors', () => {
    const names: Array<[ErrorCode, string]> = [
      ['INVALID_REQUEST', 'validation_error'],
      ['INVALID_API_KEY', 'invalid_api_key'],
      ['UNAUTHORIZED', 'missing_api_key'],
      ['QUOTA_EXCEEDED', 'monthly_quota_exceeded'],
      ['CONFLICT', 'validation_error'],
      ['INTERNAL', 'internal_server_error'],
      ['IDEMPOTENCY_CONFLICT', 'invalid_idempotent_request'],
      ['IDEMPOTENCY_IN_PROGRESS', 'concurrent_idempotent_requests'],
      ['RATE_LIMIT_EXCEEDED', 'rate_limit_exceeded'],
    ];
    for (const [code, name] of names) expect(errorBody(code, 'm').name, code).toBe(name);
  });

  it('every code answers a 4xx or 5xx status, and the body says the same status', () => {
    for (const [code, status] of Object.entries(statusOf) as Array<[ErrorCode, number]>) {
      expect(status, code).toBeGreaterThanOrEqual(400);
      expect(status, code).toBeLessThan(600);
      expect(errorBody(code, 'm')).toEqual({ error: 'm', code, name: expect.stringMatching(/^[a-z_]+$/), message: 'm', statusCode: status });
    }
  });
});

describe('the store’s errors', () => {
  it('an unavailable database is 503 with Retry-After, keeping its cause', () => {
    const cause = new Error('ECONNREFUSED');
    const e = new StoreUnavailableError(cause);
    expect(e).toBeInstanceOf(ApiError);
    expect(e).toMatchObject({ name: 'StoreUnavailableError', code: 'STORE_UNAVAILABLE', status: 503, headers: { 'Retry-After': '2' }, cause });
    expect(e.message).not.toContain('ECONNREFUSED');
  });

  it('text the database cannot store is 400, not 500', () => {
    expect(new UnstorableTextError()).toMatchObject({ code: 'INVALID_REQUEST', status: 400, message: expect.stringContaining('NUL') });
  });
});
