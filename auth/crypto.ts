// The auth area's cryptography: keys derived from the master secret (HKDF, one
// subkey per purpose), AES-256-GCM for secrets at rest, HMAC for codes,
// SHA-256 for high-entropy tokens, constant-time comparisons.
import crypto from 'node:crypto';
import { deriveKey, sealer, type Sealer } from '../core/crypto.js';

export class AuthCrypto {
  private readonly secrets: Sealer;
  private readonly codeKey: Buffer;

  constructor(masterSecret: string) {
    this.secrets = sealer(masterSecret, 'auth secrets');
    this.codeKey = deriveKey(masterSecret, 'auth code hmac');
  }

  /** AES-256-GCM (core/crypto); the output names its version so keys can rotate later. */
  encrypt(plain: string): string {
    return this.secrets.seal(plain);
  }

  decrypt(sealed: string): string {
    return this.secrets.open(sealed);
  }

  /**
   * Keyed hash of a short code, bound to what it was issued for: a leaked
   * table cannot be reversed by trying the 10^6 codes without the key.
   */
  codeHash(code: string, ...boundTo: string[]): string {
    return hmacHex(this.codeKey, [...boundTo, code].join('\n'));
  }
}

/** SHA-256 (hex) of a token with ≥128 bits of entropy: enough at rest (ASVS 6.5.2). One-shot: it runs on every session check. */
export const sha256 = (value: string): string => crypto.hash('sha256', value, 'hex');

/** An opaque token of `bytes` random bytes, base64url, with an optional readable prefix. */
export const randomToken = (prefix = '', bytes = 32): string => prefix + crypto.randomBytes(bytes).toString('base64url');

/** A code of `digits` decimal digits from the CSPRNG (uniform, no modulo bias). */
export const randomDigits = (digits = 6): string => String(crypto.randomInt(0, 10 ** digits)).padStart(digits, '0');

/** Constant-time equality of two hex digests (false for malformed or different lengths). */
export function sameHex(a: string, b: string): boolean {
  if (a.length !== b.length || a.length % 2 !== 0 || !/^[0-9a-f]*$/i.test(a) || !/^[0-9a-f]*$/i.test(b)) return false;
  return crypto.timingSafeEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'));
}

export const hmacHex = (key: crypto.BinaryLike, data: string): string => crypto.createHmac('sha256', key).update(data).digest('hex');
