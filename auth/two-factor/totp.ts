// TOTP (RFC 6238 over RFC 4226's HOTP): HMAC-SHA1, 30-second steps, 6 digits, the kind every
// authenticator app reads from an otpauth:// URI. Secrets are 20 random bytes (RFC 4226 §4: 160
// bits), written in base32 (RFC 4648, no padding) as the apps expect.
import crypto from 'node:crypto';

export const TOTP_PERIOD_SECONDS = 30;
export const TOTP_DIGITS = 6;
/** Codes of one step before and after the current one are accepted too (clock drift, a code typed late). */
export const TOTP_WINDOW = 1;

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

export function base32Encode(bytes: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

/** Spaces, dashes and padding are ignored, case too; undefined for any other character. */
export function base32Decode(text: string): Buffer | undefined {
  const clean = text.replace(/[\s=-]/g, '').toUpperCase();
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const c of clean) {
    const i = ALPHABET.indexOf(c);
    if (i < 0) return undefined;
    value = ((value << 5) | i) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** A new secret: 20 bytes from the CSPRNG, base32. */
export const newTotpSecret = (): string => base32Encode(crypto.randomBytes(20));

/** The time step of a moment (ms since the epoch). */
export const stepAt = (ms: number, period = TOTP_PERIOD_SECONDS): number => Math.floor(ms / 1000 / period);

/** HOTP (RFC 4226 §5.3) of counter `step`; `algorithm` other than sha1 only for the RFC's test vectors. */
export function hotp(key: Buffer, step: number, digits = TOTP_DIGITS, algorithm: 'sha1' | 'sha256' | 'sha512' = 'sha1'): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = crypto.createHmac(algorithm, key).update(counter).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** digits).padStart(digits, '0');
}

/** The code of a base32 secret at time step `step`. */
export function totpAt(secret: string, step: number): string {
  const key = base32Decode(secret);
  if (!key?.length) throw new Error('TOTP secret is not base32');
  return hotp(key, step);
}

/**
 * The step within ±TOTP_WINDOW of `now` whose code `code` is, or undefined. Every step of the window is
 * computed and compared in constant time, whatever matches, so the time taken says nothing. The highest
 * matching step wins (it is the one a replay check must remember).
 */
export function matchStep(secret: string, code: string, now: number): number | undefined {
  const current = stepAt(now);
  const given = Buffer.from(/^\d{6}$/.test(code) ? code : '------');
  let found: number | undefined;
  for (let step = current - TOTP_WINDOW; step <= current + TOTP_WINDOW; step++) {
    if (crypto.timingSafeEqual(Buffer.from(totpAt(secret, step)), given) && /^\d{6}$/.test(code)) found = step;
  }
  return found;
}

/**
 * The otpauth:// URI an authenticator app reads (from its QR code): label "<issuer>:<account>", every part
 * percent-encoded, so a project or user name cannot add or change parameters.
 */
export function otpauthUri(o: { issuer: string; account: string; secret: string }): string {
  const label = `${encodeURIComponent(o.issuer)}:${encodeURIComponent(o.account)}`;
  const q = `secret=${o.secret}&issuer=${encodeURIComponent(o.issuer)}&algorithm=SHA1&digits=${TOTP_DIGITS}&period=${TOTP_PERIOD_SECONDS}`;
  return `otpauth://totp/${label}?${q}`;
}
