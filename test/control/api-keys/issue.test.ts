// control/api-keys/issue.ts: API keys are pg_live_/pg_test_ and 256 random bits in base62; only the
// SHA-256 is stored, with a hint that shows too little to use.
import crypto from 'node:crypto';
import { expect, it } from 'vitest';
import { hashKey, kindOfKey, newApiKey } from '../../../control/api-keys/issue.js';

it('a new key: its kind in the prefix, 43 base62 characters, a row that keeps only its hash', () => {
  const { plain, row } = newApiKey('prj_1', 'live', 'all', 123);
  expect(plain).toMatch(/^pg_live_[0-9A-Za-z]{43}$/);
  expect(row).toMatchObject({ projectId: 'prj_1', kind: 'live', scope: 'all', createdAt: 123, revokedAt: null });
  expect(row.hash).toBe(crypto.createHash('sha256').update(plain).digest('hex'));
  expect(JSON.stringify(row)).not.toContain(plain.slice(12, -4));
  expect(row.hint).toBe(`${plain.slice(0, 12)}…${plain.slice(-4)}`);
  expect(newApiKey('prj_1', 'test', 'auth', 1).plain).toMatch(/^pg_test_/);
});

it('never the same key twice, and the random part uses the whole alphabet', () => {
  const keys = Array.from({ length: 300 }, () => newApiKey('p', 'live', 'all', 1).plain.slice(8));
  expect(new Set(keys).size).toBe(300);
  expect(new Set(keys.join('')).size).toBe(62);
});

it('kindOfKey reads the prefix only', () => {
  expect(kindOfKey('pg_live_abc')).toBe('live');
  expect(kindOfKey('pg_test_abc')).toBe('test');
  expect(kindOfKey('re_abc')).toBeUndefined();
  expect(kindOfKey('PG_LIVE_abc')).toBeUndefined();
});

it('hashKey is the hex SHA-256', () => {
  expect(hashKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
});
