import { Metadata } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { bearerOf, fromHeaders, fromMetadata } from '../../../control/api-keys/credentials.js';

describe('credentials', () => {
  it('reads the key from X-Service-Key first, else from a Bearer authorization', () => {
    expect(fromHeaders({ 'x-service-key': 'pg_test_a', authorization: 'Bearer session' })).toBe('pg_test_a');
    expect(fromHeaders({ authorization: 'Bearer pg_live_b ' })).toBe('pg_live_b');
    expect(fromHeaders({ authorization: 'Basic xyz' })).toBeUndefined();
    expect(fromHeaders({})).toBeUndefined();
    expect(bearerOf({ 'x-service-key': 'k', authorization: 'Bearer tok' })).toBe('tok');
  });

  it('reads the same names from gRPC metadata', () => {
    const m = new Metadata();
    m.set('x-service-key', 'pg_test_c');
    expect(fromMetadata(m)).toBe('pg_test_c');
    const b = new Metadata();
    b.set('authorization', 'Bearer pg_live_d');
    expect(fromMetadata(b)).toBe('pg_live_d');
    expect(fromMetadata(new Metadata())).toBeUndefined();
  });
});
