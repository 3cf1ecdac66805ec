// Secrets at rest: each purpose gets its own key derived (HKDF-SHA256) from the
// master secret, and values are sealed with AES-256-GCM (random 96-bit nonce).
import crypto from 'node:crypto';

export interface Sealer {
  seal(plain: string): string;
  open(sealed: string): string;
}

export function deriveKey(secret: string, purpose: string, bytes = 32): Buffer {
  return Buffer.from(crypto.hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.alloc(0), Buffer.from(`postgate:${purpose}`), bytes));
}

export function sealer(secret: string, purpose: string): Sealer {
  const key = deriveKey(secret, purpose);
  return {
    seal(plain) {
      const iv = crypto.randomBytes(12);
      const c = crypto.createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
      return `v1.${Buffer.concat([iv, c.getAuthTag(), body]).toString('base64url')}`;
    },
    open(sealed) {
      if (!sealed.startsWith('v1.')) throw new Error('unknown sealed format');
      const raw = Buffer.from(sealed.slice(3), 'base64url');
      const d = crypto.createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      d.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8');
    },
  };
}

/** Keyed hash for short secrets (codes): without the server key, a stolen table cannot be brute-forced. */
export function keyedHash(key: Buffer, value: string): string {
  return crypto.createHmac('sha256', key).update(value).digest('hex');
}

/** Constant-time equality of two strings of any length. */
export function safeEqual(a: string, b: string): boolean {
  const ha = crypto.createHash('sha256').update(a).digest();
  const hb = crypto.createHash('sha256').update(b).digest();
  return crypto.timingSafeEqual(ha, hb) && a.length === b.length;
}
