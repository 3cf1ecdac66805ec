// The MAC of the tokens we put in addresses and links (their grammar is in
// common/return-path.ts): 64 bits of HMAC-SHA256 under a key derived from the master
// secret, so what comes back cannot be forged. Only control holds the key and checks it;
// the gateway just parses the shape.
import crypto from 'node:crypto';
import { deriveKey } from '../../core/crypto.js';
import { bounceLocalPart, hexOf, parseToken, returnPathDomain, unsubscribeLocalPart, unsubscribeTokenOf, type ParsedToken } from '../../common/return-path.js';

export class MailTokens {
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
  verpAddress(emailId: string, index: number, senderDomain: string, label?: string): string {
    const hex = hexOf(emailId);
    return `${bounceLocalPart(hex, index, this.mac('b', hex, index))}@${returnPathDomain(senderDomain, label)}`;
  }

  /** Recipient n's (0-based, in the email's recipient order) unsubscribe token. */
  unsubscribeToken(emailId: string, index: number): string {
    const hex = hexOf(emailId);
    return unsubscribeTokenOf(hex, index, this.mac('u', hex, index));
  }

  unsubscribeMailto(emailId: string, index: number, senderDomain: string, label?: string): string {
    return `mailto:${unsubscribeLocalPart(this.unsubscribeToken(emailId, index))}@${returnPathDomain(senderDomain, label)}?subject=unsubscribe`;
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
