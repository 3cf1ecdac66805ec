// The tokens we put in addresses and links, so what comes back can be tied to one
// email without a lookup table, and cannot be forged:
//
//   envelope sender (VERP)     b+<email id, 32 hex>.<recipient n>.<mac>@pg-bounces.<domain>
//                              (before per-recipient return paths: b+<email id>.<mac>)
//   List-Unsubscribe mailto    u+<email id>.<recipient n>.<mac>@pg-bounces.<domain>
//   List-Unsubscribe https     <base>/unsubscribe/<email id>.<recipient n>.<mac>
//
// Both local parts stay under SMTP's 64 characters and use lower case only (some
// systems fold case). The MAC (64 bits of HMAC-SHA256 under a key derived from the
// master secret) is checked by control only; the gateway just parses the shape.
import crypto from 'node:crypto';
import { deriveKey } from '../../core/crypto.js';
import { returnPathDomain } from '../domains/records.js';

export type ParsedToken =
  | { kind: 'bounce'; emailId: string; index?: number; mac: string }
  | { kind: 'unsubscribe'; emailId: string; index: number; mac: string };

const hexOf = (uuid: string) => uuid.replace(/-/g, '').toLowerCase();
const uuidOf = (hex: string) => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;

const BOUNCE = /^b\+([0-9a-f]{32})(?:\.(\d{1,3}))?\.([0-9a-f]{16})$/;
const UNSUBSCRIBE = /^(?:u\+)?([0-9a-f]{32})\.(\d{1,3})\.([0-9a-f]{16})$/;

/** Parses a local part (b+… or u+…) or an unsubscribe link token; no MAC check. */
export function parseToken(token: string): ParsedToken | undefined {
  const t = token.toLowerCase();
  let m = BOUNCE.exec(t);
  if (m)
    return m[2] === undefined
      ? { kind: 'bounce', emailId: uuidOf(m[1]!), mac: m[3]! }
      : { kind: 'bounce', emailId: uuidOf(m[1]!), index: Number(m[2]), mac: m[3]! };
  m = UNSUBSCRIBE.exec(t);
  if (m && (t.startsWith('u+') || !token.includes('+'))) return { kind: 'unsubscribe', emailId: uuidOf(m[1]!), index: Number(m[2]), mac: m[3]! };
  return undefined;
}

export class Tokens {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = deriveKey(secret, 'mail-tokens');
  }

  private mac(...parts: Array<string | number>): string {
    return crypto.createHmac('sha256', this.key).update(parts.join(':')).digest('hex').slice(0, 16);
  }

  /**
   * The envelope sender of recipient n's copy (0-based, in the email's recipient order):
   * a bounce or report sent to it concerns that recipient alone, whatever its body claims,
   * so one recipient cannot bounce or suppress another.
   */
  verpAddress(emailId: string, index: number, senderDomain: string): string {
    const hex = hexOf(emailId);
    return `b+${hex}.${index}.${this.mac('b', hex, index)}@${returnPathDomain(senderDomain)}`;
  }

  /** Recipient n's (0-based, in the email's recipient order) unsubscribe token. */
  unsubscribeToken(emailId: string, index: number): string {
    const hex = hexOf(emailId);
    return `${hex}.${index}.${this.mac('u', hex, index)}`;
  }

  unsubscribeMailto(emailId: string, index: number, senderDomain: string): string {
    return `mailto:u+${this.unsubscribeToken(emailId, index)}@${returnPathDomain(senderDomain)}?subject=unsubscribe`;
  }

  /** The parsed token when its MAC is right, else undefined. */
  verify(token: string): ParsedToken | undefined {
    const p = parseToken(token);
    if (!p) return undefined;
    const hex = hexOf(p.emailId);
    const want = p.kind === 'unsubscribe' ? this.mac('u', hex, p.index) : p.index === undefined ? this.mac('b', hex) : this.mac('b', hex, p.index);
    return crypto.timingSafeEqual(Buffer.from(want), Buffer.from(p.mac)) ? p : undefined;
  }
}
