// auth/two-factor/totp.ts: RFC 6238 Appendix B's SHA-1 vectors (truncated to the 6 digits apps show),
// base32 as RFC 4648 writes it, the ±1 step window, and an otpauth URI no name can add parameters to.
import { describe, expect, it } from 'vitest';
import { base32Decode, base32Encode, hotp, matchStep, newTotpSecret, otpauthUri, stepAt, totpAt } from '../../auth/two-factor/totp.js';

const RFC_KEY = Buffer.from('12345678901234567890');

describe('TOTP (RFC 6238)', () => {
  it.each([
    [59, '94287082'],
    [1111111109, '07081804'],
    [1111111111, '14050471'],
    [1234567890, '89005924'],
    [2000000000, '69279037'],
    [20000000000, '65353130'],
  ])('Appendix B, SHA-1, T = %i s', (seconds, eight) => {
    const step = stepAt(seconds * 1000);
    expect(hotp(RFC_KEY, step, 8)).toBe(eight);
    expect(hotp(RFC_KEY, step)).toBe(eight.slice(-6));
    // The same through the base32 secret an app is given.
    expect(totpAt(base32Encode(RFC_KEY), step)).toBe(eight.slice(-6));
  });

  it('base32 as RFC 4648 (no padding), decoded whatever the case, spaces or dashes', () => {
    expect(base32Encode(Buffer.from('foobar'))).toBe('MZXW6YTBOI');
    expect(base32Encode(RFC_KEY)).toBe('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ');
    expect(base32Decode('mzxw 6ytb-oi==')?.toString()).toBe('foobar');
    expect(base32Decode('MZXW1')).toBeUndefined();
    const s = newTotpSecret();
    expect(s).toMatch(/^[A-Z2-7]{32}$/);
    expect(base32Decode(s)).toHaveLength(20);
    expect(newTotpSecret()).not.toBe(s);
  });

  it('accepts the codes of the step before and after, refuses two steps away and anything not 6 digits', () => {
    const secret = newTotpSecret();
    const now = 1_800_000_015_000; // mid-step
    const t = stepAt(now);
    expect(matchStep(secret, totpAt(secret, t), now)).toBe(t);
    expect(matchStep(secret, totpAt(secret, t - 1), now)).toBe(t - 1);
    expect(matchStep(secret, totpAt(secret, t + 1), now)).toBe(t + 1);
    for (const far of [t - 2, t + 2, t - 10]) {
      const code = totpAt(secret, far);
      // A far step's code may equal a near one's by chance (1 in 10^6 per pair): only then is it accepted.
      const near = [t - 1, t, t + 1].some((s) => totpAt(secret, s) === code);
      expect(matchStep(secret, code, now)).toBe(near ? expect.any(Number) : undefined);
    }
    const right = totpAt(secret, t);
    for (const bad of ['', `${right}0`, right.slice(1), ` ${right}`, 'abcdef', '１２３４５６']) expect(matchStep(secret, bad, now)).toBeUndefined();
  });

  it('the otpauth URI: label issuer:account, parameters as authenticator apps read them', () => {
    const uri = otpauthUri({ issuer: 'Acme', account: 'jane@example.com', secret: 'JBSWY3DPEHPK3PXP' });
    expect(uri).toBe('otpauth://totp/Acme:jane%40example.com?secret=JBSWY3DPEHPK3PXP&issuer=Acme&algorithm=SHA1&digits=6&period=30');
  });

  it('a project or user name cannot inject parameters or change the label', () => {
    const uri = otpauthUri({
      issuer: 'Evil?secret=AAAA&issuer=Bank#x',
      account: 'me@x.com&secret=BBBB&digits=8:y/z',
      secret: 'JBSWY3DPEHPK3PXP',
    });
    const u = new URL(uri);
    expect(u.protocol).toBe('otpauth:');
    expect(u.hash).toBe('');
    expect([...u.searchParams.keys()]).toEqual(['secret', 'issuer', 'algorithm', 'digits', 'period']);
    expect(u.searchParams.get('secret')).toBe('JBSWY3DPEHPK3PXP');
    expect(u.searchParams.get('issuer')).toBe('Evil?secret=AAAA&issuer=Bank#x');
    expect(u.searchParams.get('digits')).toBe('6');
    // One ':' separates issuer and account in the label; the names' own are encoded.
    expect(u.host).toBe('totp');
    const label = decodeURIComponent(u.pathname.slice(1));
    expect(u.pathname.split(':')).toHaveLength(2);
    expect(label).toBe('Evil?secret=AAAA&issuer=Bank#x:me@x.com&secret=BBBB&digits=8:y/z');
  });
});
