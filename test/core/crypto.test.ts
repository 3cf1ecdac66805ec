// core/crypto.ts: keys derived per purpose (HKDF-SHA256), values sealed with AES-256-GCM, keyed
// hashes and a constant-time equality of strings of any length.
import nodeCrypto from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { deriveKey, keyedHash, safeEqual, sealer } from '../../core/crypto.js';

afterEach(() => vi.restoreAllMocks());

describe('deriveKey', () => {
  it('one key per purpose, stable, of the size asked, as HKDF-SHA256 with the postgate: info', () => {
    const k = deriveKey('master', 'dkim');
    expect(k).toHaveLength(32);
    expect(deriveKey('master', 'dkim')).toEqual(k);
    expect(deriveKey('master', 'mail-tokens')).not.toEqual(k);
    expect(deriveKey('other', 'dkim')).not.toEqual(k);
    expect(deriveKey('master', 'dkim', 16)).toHaveLength(16);
    expect(k).toEqual(Buffer.from(nodeCrypto.hkdfSync('sha256', 'master', Buffer.alloc(0), 'postgate:dkim', 32)));
  });
});

describe('sealer', () => {
  it('seals with a random nonce and opens what it sealed, only under the same secret and purpose', () => {
    const s = sealer('master', 'auth secrets');
    const a = s.seal('private key');
    expect(a).toMatch(/^v1\.[A-Za-z0-9_-]+$/);
    expect(a).not.toBe(s.seal('private key'));
    expect(s.open(a)).toBe('private key');
    expect(() => sealer('master', 'dkim').open(a)).toThrow();
    expect(() => sealer('other', 'auth secrets').open(a)).toThrow();
  });

  it('refuses a changed byte (GCM authenticates) and an unknown format', () => {
    const s = sealer('master', 'p');
    const raw = Buffer.from(s.seal('x').slice(3), 'base64url');
    raw[0]! ^= 1;
    expect(() => s.open(`v1.${raw.toString('base64url')}`)).toThrow();
    expect(() => s.open('v0.abc')).toThrow(/unknown sealed format/);
  });
});

it('keyedHash is HMAC-SHA256 in hex', () => {
  const key = Buffer.from('k');
  expect(keyedHash(key, 'v')).toBe(nodeCrypto.createHmac('sha256', key).update('v').digest('hex'));
});

describe('safeEqual', () => {
  it('is true only for equal strings, of any lengths', () => {
    expect(safeEqual('token', 'token')).toBe(true);
    expect(safeEqual('token', 'tokeN')).toBe(false);
    expect(safeEqual('token', 'token2')).toBe(false);
    expect(safeEqual('', '')).toBe(true);
    expect(safeEqual('', 'a')).toBe(false);
  });

  it('compares digests in constant time, even when the lengths differ', () => {
    const spy = vi.spyOn(nodeCrypto, 'timingSafeEqual');
    safeEqual('short', 'a much longer string');
    expect(spy).toHaveBeenCalledTimes(1);
  });
});
