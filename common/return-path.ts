// The grammar of the tokens we put in addresses and links, so what comes back can be
// tied to one email without a lookup table:
//
//   envelope sender (VERP)     b+<email id, 32 hex>.<recipient n>.<mac>@pg-bounces.<domain>
//                              (before per-recipient return paths: b+<email id>.<mac>)
//   List-Unsubscribe mailto    u+<email id>.<recipient n>.<mac>@pg-bounces.<domain>
//   List-Unsubscribe https     <base>/unsubscribe/<email id>.<recipient n>.<mac>
//
// Both local parts stay under SMTP's 64 characters and use lower case only (some
// systems fold case). Only the shape lives here, so the gateway can recognise our
// addresses; the MAC is made and checked by control alone, which holds the key.

/** The subdomain of a sender domain that receives bounces, reports and unsubscribe mails. */
export const RETURN_PATH_LABEL = 'pg-bounces';

export function returnPathDomain(domain: string, label: string = RETURN_PATH_LABEL): string {
  return `${label}.${domain}`;
}

/** A custom return-path label (Resend's custom_return_path): one DNS label, lower case. */
export const RETURN_PATH_LABEL_SHAPE = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

export type ParsedToken =
  | { kind: 'bounce'; emailId: string; index?: number; mac: string }
  | { kind: 'unsubscribe'; emailId: string; index: number; mac: string };

/** An email id (a UUID) as tokens carry it: 32 lower-case hex digits. */
export const hexOf = (uuid: string): string => uuid.replace(/-/g, '').toLowerCase();
export const uuidOf = (hex: string): string => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;

/** Recipient n's bounce local part (VERP). */
export const bounceLocalPart = (hex: string, index: number, mac: string): string => `b+${hex}.${index}.${mac}`;

/** Recipient n's unsubscribe token, as the https link carries it. */
export const unsubscribeTokenOf = (hex: string, index: number, mac: string): string => `${hex}.${index}.${mac}`;

/** The local part of the unsubscribe mailto: the token behind u+. */
export const unsubscribeLocalPart = (token: string): string => `u+${token}`;

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
