// Email addresses as the API accepts them: `user@example.com` or
// `Display Name <user@example.com>`. Anything that could smuggle a header
// (CR, LF, NUL) or is not a plain addr-spec is refused.
export interface Mailbox {
  name?: string;
  address: string;
}

const LOCAL = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
/** RFC 5322 specials that are structure, not text, outside a quoted display name. */
const UNQUOTED_SPECIALS = /[,;:@()[\]]/;
const LABEL = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;

export function isAddress(s: string): boolean {
  if (s.length > 254) return false;
  const at = s.lastIndexOf('@');
  if (at < 1) return false;
  const local = s.slice(0, at);
  const domain = s.slice(at + 1);
  if (local.length > 64 || !LOCAL.test(local)) return false;
  const labels = domain.split('.');
  // Single-label domains are refused, except localhost: the default system sender is no-reply@localhost.
  if (domain.toLowerCase() === 'localhost') return true;
  return labels.length >= 2 && labels.every((l) => LABEL.test(l)) && !/^\d+$/.test(labels[labels.length - 1]!);
}

/**
 * Mailboxes parsed lately: accepting an email parses each of its addresses more than once
 * (checking the request, judging it, listing its recipients), and a batch's sender is the same
 * in every email. The parse is a pure function of the string; the answers are frozen.
 */
const parsed = new Map<string, Readonly<Mailbox> | null>();
const PARSED_KEPT = 1000;

/** Parses one mailbox, or returns undefined when it is not acceptable. */
export function parseMailbox(input: string): Readonly<Mailbox> | undefined {
  const hit = parsed.get(input);
  if (hit !== undefined) return hit ?? undefined;
  const m = parse(input);
  if (parsed.size >= PARSED_KEPT) parsed.clear();
  parsed.set(input, m ? Object.freeze(m) : null);
  return m;
}

function parse(input: string): Mailbox | undefined {
  if (/[\r\n\0]/.test(input)) return undefined;
  const s = input.trim();
  const m = /^(.*?)\s*<([^<>]+)>$/.exec(s);
  if (m) {
    let name = m[1]!.trim();
    const quoted = /^"(.*)"$/.exec(name);
    if (quoted) name = quoted[1]!;
    const address = m[2]!.trim();
    if (!isAddress(address) || name.length > 200 || /["\\<>]/.test(name)) return undefined;
    // Unquoted, these make the value an address list or a group ("ceo@bank.test, <me@ours>",
    // "undisclosed:ceo@bank.test; <me@ours>"), which receivers display as someone else.
    if (!quoted && UNQUOTED_SPECIALS.test(name)) return undefined;
    return name ? { name, address } : { address };
  }
  return isAddress(s) ? { address: s } : undefined;
}

export const domainOf = (address: string): string => address.slice(address.lastIndexOf('@') + 1).toLowerCase();

/** Canonical form used to compare recipients and in the suppression list. */
export const canonical = (address: string): string => {
  const at = address.lastIndexOf('@');
  return `${address.slice(0, at)}@${address.slice(at + 1).toLowerCase()}`;
};
