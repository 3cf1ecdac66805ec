// common/return-path.ts: the grammar of the tokens put in return paths and unsubscribe links (the
// shape only; control's MailTokens makes and checks the MAC).
import { describe, expect, it } from 'vitest';
import {
  bounceLocalPart,
  hexOf,
  parseToken,
  RETURN_PATH_LABEL_SHAPE,
  returnPathDomain,
  unsubscribeLocalPart,
  unsubscribeTokenOf,
  uuidOf,
} from '../../common/return-path.js';

const ID = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
const HEX = '0190a1b2c3d47e5f8a9b0c1d2e3f4a5b';
const MAC = '0123456789abcdef';

it('an email id travels as 32 lower-case hex digits and comes back as the same UUID', () => {
  expect(hexOf(ID.toUpperCase())).toBe(HEX);
  expect(uuidOf(HEX)).toBe(ID);
});

it('return-path domains: pg-bounces by default, or the project’s label', () => {
  expect(returnPathDomain('acme.test')).toBe('pg-bounces.acme.test');
  expect(returnPathDomain('acme.test', 'mail')).toBe('mail.acme.test');
  for (const ok of ['mail', 'a', 'bounce-1', 'x'.repeat(63)]) expect(RETURN_PATH_LABEL_SHAPE.test(ok), ok).toBe(true);
  for (const bad of ['Mail', '-mail', 'mail-', 'a.b', '', 'x'.repeat(64), 'ma il']) expect(RETURN_PATH_LABEL_SHAPE.test(bad), bad).toBe(false);
});

describe('parseToken', () => {
  it('reads a bounce local part, with a recipient index or (older mail) without', () => {
    expect(parseToken(bounceLocalPart(HEX, 7, MAC))).toEqual({ kind: 'bounce', emailId: ID, index: 7, mac: MAC });
    expect(parseToken(`b+${HEX}.${MAC}`)).toEqual({ kind: 'bounce', emailId: ID, mac: MAC });
  });

  it('reads an unsubscribe token as the link carries it and as the mailto’s local part', () => {
    const token = unsubscribeTokenOf(HEX, 2, MAC);
    expect(parseToken(token)).toEqual({ kind: 'unsubscribe', emailId: ID, index: 2, mac: MAC });
    expect(parseToken(unsubscribeLocalPart(token))).toEqual({ kind: 'unsubscribe', emailId: ID, index: 2, mac: MAC });
  });

  it('folds case (some systems upper-case local parts)', () => {
    expect(parseToken(bounceLocalPart(HEX, 1, MAC).toUpperCase())).toMatchObject({ kind: 'bounce', emailId: ID, index: 1 });
  });

  it('refuses anything else: other tags, short ids or MACs, indexes over three digits, extra parts', () => {
    for (const bad of [
      'hello',
      `x+${HEX}.1.${MAC}`,
      `b+${HEX.slice(1)}.1.${MAC}`,
      `b+${HEX}.1.${MAC.slice(1)}`,
      `b+${HEX}.1000.${MAC}`,
      `b+${HEX}.1.${MAC}.x`,
      `u+${HEX}.${MAC}`,
      `${HEX}.1.${MAC}+x`,
      `b+${HEX}.-1.${MAC}`,
    ])
      expect(parseToken(bad), bad).toBeUndefined();
  });

  it('every token fits in SMTP’s 64-character local part, even at the largest index', () => {
    expect(bounceLocalPart(HEX, 999, MAC).length).toBeLessThanOrEqual(64);
    expect(unsubscribeLocalPart(unsubscribeTokenOf(HEX, 999, MAC)).length).toBeLessThanOrEqual(64);
  });
});
