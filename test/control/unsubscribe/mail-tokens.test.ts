// control/unsubscribe/mail-tokens.ts: the MAC'd return paths (VERP) and unsubscribe tokens, in
// common/return-path.ts's grammar.
import crypto from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { hexOf, parseToken } from '../../../common/return-path.js';
import { MailTokens } from '../../../control/unsubscribe/mail-tokens.js';
import { deriveKey } from '../../../core/crypto.js';

describe('return-path tokens', () => {
  const tokens = new MailTokens('a master secret');
  const id = crypto.randomUUID();

  it('VERP and unsubscribe addresses fit in 64 characters and verify only untouched', () => {
    const verp = tokens.verpAddress(id, 49, 'acme.test');
    expect(verp).toMatch(/^b\+[0-9a-f]{32}\.49\.[0-9a-f]{16}@pg-bounces\.acme\.test$/);
    const local = verp.split('@')[0]!;
    expect(local.length).toBeLessThanOrEqual(64);
    expect(tokens.verify(local)).toEqual({ kind: 'bounce', emailId: id, index: 49, mac: local.slice(-16) });
    // Another recipient's index under this MAC is refused: a return path names one recipient.
    expect(tokens.verify(local.replace('.49.', '.48.'))).toBeUndefined();
    expect(tokens.verify(local.replace('.49.', '.'))).toBeUndefined();
    // The return paths of mail queued before per-recipient VERP still verify (without an index).
    const legacy = `b+${id.replace(/-/g, '')}.${crypto
      .createHmac('sha256', deriveKey('a master secret', 'mail-tokens'))
      .update(`b:${id.replace(/-/g, '')}`)
      .digest('hex')
      .slice(0, 16)}`;
    expect(tokens.verify(legacy)).toEqual({ kind: 'bounce', emailId: id, mac: legacy.slice(-16) });
    expect(tokens.verify(local.toUpperCase())).toMatchObject({ emailId: id });
    expect(tokens.verify(local.slice(0, -1) + (local.endsWith('0') ? '1' : '0'))).toBeUndefined();
    expect(new MailTokens('another secret').verify(local)).toBeUndefined();

    const u = tokens.unsubscribeToken(id, 3);
    expect(tokens.verify(u)).toMatchObject({ kind: 'unsubscribe', emailId: id, index: 3 });
    expect(tokens.verify(`u+${u}`)).toMatchObject({ kind: 'unsubscribe', index: 3 });
    expect(`u+${u}`.length).toBeLessThanOrEqual(64);
    expect(tokens.verify(u.replace('.3.', '.4.'))).toBeUndefined();
    expect(tokens.unsubscribeMailto(id, 3, 'acme.test')).toBe(`mailto:u+${u}@pg-bounces.acme.test?subject=unsubscribe`);
    expect(parseToken('hello')).toBeUndefined();
  });

  it('a bounce MAC does not make an unsubscribe token, nor the reverse (each kind has its own MAC)', () => {
    const verp = tokens.verpAddress(id, 2, 'acme.test').split('@')[0]!;
    const mac = verp.slice(-16);
    expect(tokens.verify(`${hexOf(id)}.2.${mac}`)).toBeUndefined();
    const u = tokens.unsubscribeToken(id, 2);
    expect(tokens.verify(`b+${hexOf(id)}.2.${u.slice(-16)}`)).toBeUndefined();
  });

  it('a custom return-path label goes in the address and the mailto', () => {
    expect(tokens.verpAddress(id, 0, 'acme.test', 'mail')).toMatch(/@mail\.acme\.test$/);
    expect(tokens.unsubscribeMailto(id, 0, 'acme.test', 'mail')).toMatch(/@mail\.acme\.test\?subject=unsubscribe$/);
  });

  it('checks the MAC in constant time', () => {
    const spy = vi.spyOn(crypto, 'timingSafeEqual');
    tokens.verify(tokens.unsubscribeToken(id, 1).replace(/.$/, (c) => (c === '0' ? '1' : '0')));
    expect(spy).toHaveBeenCalledTimes(1);
  });
});

afterEach(() => vi.restoreAllMocks());
