// auth/crypto.ts: keys derived per purpose from the master secret, sealed secrets, keyed code
// hashes bound to what they were issued for, random tokens and codes, constant-time comparison.
import nodeCrypto from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AuthCrypto, hmacHex, randomDigits, randomToken, sameHex, sha256 } from '../../auth/crypto.js';

const SECRET = 'a'.repeat(64);

afterEach(() => vi.restoreAllMocks());

describe('sealed secrets', () => {
  it('round-trips, never shows the plain text, and differs each time (random nonce)', () => {
    const c = new AuthCrypto(SECRET);
    const a = c.encrypt('client-secret-123');
    const b = c.encrypt('client-secret-123');
    expect(a).toMatch(/^v1\./);
    expect(a).not.toContain('client-secret-123');
    expect(a).not.toBe(b);
    expect(c.decrypt(a)).toBe('client-secret-123');
    expect(c.decrypt(c.encrypt(''))).toBe('');
    expect(c.decrypt(c.encrypt('пароль ✓'))).toBe('пароль ✓');
  });

  it('refuses a tampered value, another master secret and an unknown format', () => {
    const c = new AuthCrypto(SECRET);
    const sealed = c.encrypt('secret');
    const raw = Buffer.from(sealed.slice(3), 'base64url');
    raw[raw.length - 1]! ^= 1;
    expect(() => c.decrypt(`v1.${raw.toString('base64url')}`)).toThrow();
    expect(() => new AuthCrypto('b'.repeat(64)).decrypt(sealed)).toThrow();
    expect(() => c.decrypt(`v2.${sealed.slice(3)}`)).toThrow(/unknown sealed format/);
  });
});

describe('code hashes', () => {
  it('are keyed: the same code under another master secret hashes differently, and a plain SHA-256 is not it', () => {
    const a = new AuthCrypto(SECRET).codeHash('123456', 'prj', 'live', 'email', 'a@x.test');
    const b = new AuthCrypto('b'.repeat(64)).codeHash('123456', 'prj', 'live', 'email', 'a@x.test');
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(a).not.toBe(b);
    expect(a).not.toBe(sha256(['prj', 'live', 'email', 'a@x.test', '123456'].join('\n')));
    expect(new AuthCrypto(SECRET).codeHash('123456', 'prj', 'live', 'email', 'a@x.test')).toBe(a);
  });

  it('are bound to what the code was issued for: project, environment, channel and address', () => {
    const c = new AuthCrypto(SECRET);
    const base = ['prj', 'live', 'email', 'a@x.test'];
    const h = c.codeHash('123456', ...base);
    for (let i = 0; i < base.length; i++) {
      const other = [...base];
      other[i] = `${other[i]}x`;
      expect(c.codeHash('123456', ...other)).not.toBe(h);
    }
    expect(c.codeHash('123457', ...base)).not.toBe(h);
  });
});

describe('random values', () => {
  it('randomToken: the prefix, then base64url of the given number of bytes, never twice the same', () => {
    const t = randomToken('pgs_');
    expect(t).toMatch(/^pgs_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(t.slice(4), 'base64url')).toHaveLength(32);
    expect(randomToken('', 16)).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(new Set(Array.from({ length: 1000 }, () => randomToken())).size).toBe(1000);
  });

  it('randomDigits: exactly n digits, leading zeros kept, from the CSPRNG over the whole range', () => {
    const spy = vi.spyOn(nodeCrypto, 'randomInt');
    expect(randomDigits(6)).toMatch(/^\d{6}$/);
    expect(spy).toHaveBeenCalledWith(0, 1_000_000);
    spy.mockReturnValueOnce(42 as never);
    expect(randomDigits(6)).toBe('000042');
    spy.mockRestore();
    const firsts = new Set(Array.from({ length: 2000 }, () => randomDigits(6)[0]));
    expect(firsts.size).toBe(10);
  });
});

describe('sameHex', () => {
  it('is true only for equal hex digests, whatever their case', () => {
    const h = hmacHex('k', 'v');
    expect(sameHex(h, h)).toBe(true);
    expect(sameHex(h, h.toUpperCase())).toBe(true);
    expect(sameHex(h, `${h.slice(0, -1)}${h.endsWith('0') ? '1' : '0'}`)).toBe(false);
  });

  it('is false for malformed input and different lengths, without comparing', () => {
    const spy = vi.spyOn(nodeCrypto, 'timingSafeEqual');
    const h = hmacHex('k', 'v');
    expect(sameHex(h, '')).toBe(false);
    expect(sameHex('', '')).toBe(true);
    expect(sameHex(h, h.slice(0, -2))).toBe(false);
    expect(sameHex('abc', 'abc')).toBe(false); // odd length
    expect(sameHex(`${h.slice(0, -2)}zz`, `${h.slice(0, -2)}zz`)).toBe(false);
    expect(spy).toHaveBeenCalledTimes(1); // only the well-formed pair ('' and '')
  });

  it('compares in constant time (crypto.timingSafeEqual)', () => {
    const spy = vi.spyOn(nodeCrypto, 'timingSafeEqual');
    const h = hmacHex('k', 'v');
    sameHex(h, hmacHex('k', 'w'));
    expect(spy).toHaveBeenCalledTimes(1);
  });
});

it('sha256 is the hex SHA-256 of the value', () => {
  expect(sha256('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
});
