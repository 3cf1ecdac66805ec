// Signed tracking URLs: the open pixel and the click redirect of one email, on one domain's tracking
// host. The MAC (HMAC-SHA256 under a key derived from the master secret, 128 bits) covers the kind,
// the host, the email id, the time the message left and, for a click, the original URL: so a link
// altered anywhere, cut short, moved to another domain's host or given another email's id does not
// verify, and the redirect can only ever go where the sender's own html pointed. The URL names the
// email, never a recipient.
import crypto from 'node:crypto';
import { deriveKey } from '../../core/crypto.js';

/** Paths on the tracking host: /o/<email>/<t>/<mac>.gif and /c/<email>/<t>/<mac>/<base64url of the URL>. */
export const OPEN_PREFIX = '/o/';
export const CLICK_PREFIX = '/c/';

const EMAIL_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIME = /^[0-9a-z]{1,10}$/;
const MAC = /^[A-Za-z0-9_-]{22}$/;
const B64 = /^[A-Za-z0-9_-]+$/;

/** What a verified tracking URL names. */
export type Tracked = { kind: 'open'; emailId: string; sentAt: number } | { kind: 'click'; emailId: string; sentAt: number; url: string };

/** An http(s) URL a click may redirect to: nothing else is ever signed or followed. */
export const isWebUrl = (url: string): boolean => /^https?:\/\/[^\s/?#]/i.test(url) && !hasControlOrSpace(url);

/** Whitespace or a control character: never in a URL we sign or follow (a browser would have encoded it). */
function hasControlOrSpace(url: string): boolean {
  for (let i = 0; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) return true;
  }
  return /\s/.test(url);
}

export class TrackingLinks {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = deriveKey(secret, 'tracking-links');
  }

  private mac(kind: 'o' | 'c', host: string, emailId: string, t: string, url = ''): string {
    return crypto
      .createHmac('sha256', this.key)
      .update(`${kind}\n${host.toLowerCase()}\n${emailId}\n${t}\n${url}`)
      .digest()
      .subarray(0, 16)
      .toString('base64url');
  }

  /** The pixel's URL (`base`: `https://links.example.com`, the domain's tracking host). */
  openUrl(base: string, host: string, emailId: string, sentAt: number): string {
    const t = Math.floor(sentAt / 1000).toString(36);
    return `${base}${OPEN_PREFIX}${emailId}/${t}/${this.mac('o', host, emailId, t)}.gif`;
  }

  /** The redirect through the tracking host to `url` (an http(s) URL, kept byte for byte). */
  clickUrl(base: string, host: string, emailId: string, sentAt: number, url: string): string {
    const t = Math.floor(sentAt / 1000).toString(36);
    return `${base}${CLICK_PREFIX}${emailId}/${t}/${this.mac('c', host, emailId, t, url)}/${Buffer.from(url, 'utf8').toString('base64url')}`;
  }

  /** What a request's path names on `host` (the Host it came to), or undefined: unsigned, altered, cut short or foreign. */
  verify(host: string, path: string): Tracked | undefined {
    const q = path.indexOf('?');
    const p = q < 0 ? path : path.slice(0, q);
    if (p.length > 16_384) return undefined;
    if (p.startsWith(OPEN_PREFIX)) {
      if (!p.endsWith('.gif')) return undefined;
      const [emailId, t, mac, ...rest] = p.slice(OPEN_PREFIX.length, -4).split('/');
      if (rest.length || !emailId || !t || !mac || !EMAIL_ID.test(emailId) || !TIME.test(t) || !MAC.test(mac)) return undefined;
      if (!same(mac, this.mac('o', host, emailId, t))) return undefined;
      return { kind: 'open', emailId, sentAt: Number.parseInt(t, 36) * 1000 };
    }
    if (p.startsWith(CLICK_PREFIX)) {
      const [emailId, t, mac, encoded, ...rest] = p.slice(CLICK_PREFIX.length).split('/');
      if (rest.length || !emailId || !t || !mac || !encoded || !EMAIL_ID.test(emailId) || !TIME.test(t) || !MAC.test(mac) || !B64.test(encoded))
        return undefined;
      const url = Buffer.from(encoded, 'base64url').toString('utf8');
      // Re-encoding must give the same text: no second spelling of one link.
      if (Buffer.from(url, 'utf8').toString('base64url') !== encoded || !isWebUrl(url)) return undefined;
      if (!same(mac, this.mac('c', host, emailId, t, url))) return undefined;
      return { kind: 'click', emailId, sentAt: Number.parseInt(t, 36) * 1000, url };
    }
    return undefined;
  }
}

const same = (a: string, b: string): boolean => a.length === b.length && crypto.timingSafeEqual(Buffer.from(a), Buffer.from(b));
