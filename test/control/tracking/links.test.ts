import { describe, expect, it } from 'vitest';
import { TrackingLinks } from '../../../control/tracking/links.js';

const links = new TrackingLinks('a-secret-of-the-server-0123456789');
const host = 'links.example.com';
const base = `https://${host}`;
const id = '0192b7a4-1111-7abc-8def-0123456789ab';
const other = '0192b7a4-2222-7abc-8def-0123456789ab';
const sent = Date.UTC(2026, 10, 29, 9, 0, 0);
const pathOf = (u: string) => new URL(u).pathname;

describe('TrackingLinks', () => {
  it('signs an open pixel URL that verifies on its host only', () => {
    const u = links.openUrl(base, host, id, sent);
    expect(u.startsWith(`${base}/o/${id}/`)).toBe(true);
    expect(u.endsWith('.gif')).toBe(true);
    expect(links.verify(host, pathOf(u))).toEqual({ kind: 'open', emailId: id, sentAt: sent });
    expect(links.verify('LINKS.EXAMPLE.COM', pathOf(u))).toEqual({ kind: 'open', emailId: id, sentAt: sent });
    expect(links.verify('links.other.example', pathOf(u))).toBeUndefined();
  });

  it('signs a click URL that gives back the original URL exactly', () => {
    const url = 'https://shop.example/a%20b?x=1&y=%20é#frag';
    const u = links.clickUrl(base, host, id, sent, url);
    expect(links.verify(host, pathOf(u))).toEqual({ kind: 'click', emailId: id, sentAt: sent, url });
    // A query string added by someone changes nothing.
    expect(links.verify(host, `${pathOf(u)}?utm=1`)).toEqual({ kind: 'click', emailId: id, sentAt: sent, url });
  });

  it('never names the recipient', () => {
    const u = links.clickUrl(base, host, id, sent, 'https://example.org/');
    expect(u).not.toContain('@');
  });

  it('refuses a tampered URL, a foreign email id, another host, a truncated path and another key', () => {
    const url = 'https://example.org/page';
    const p = pathOf(links.clickUrl(base, host, id, sent, url));
    const [, c, email, t, mac, enc] = p.split('/');
    expect(c).toBe('c');
    // Another target, signed for nobody: an open redirect attempt.
    const evil = Buffer.from('https://evil.example/', 'utf8').toString('base64url');
    expect(links.verify(host, `/c/${email}/${t}/${mac}/${evil}`)).toBeUndefined();
    // Another email's id with this signature.
    expect(links.verify(host, `/c/${other}/${t}/${mac}/${enc}`)).toBeUndefined();
    // Another time.
    expect(links.verify(host, `/c/${email}/${(Number.parseInt(t!, 36) + 1).toString(36)}/${mac}/${enc}`)).toBeUndefined();
    // One character of the MAC changed.
    const flipped = (mac![0] === 'A' ? 'B' : 'A') + mac!.slice(1);
    expect(links.verify(host, `/c/${email}/${t}/${flipped}/${enc}`)).toBeUndefined();
    // Truncated anywhere.
    for (let n = 1; n < p.length; n += 7) expect(links.verify(host, p.slice(0, p.length - n))).toBeUndefined();
    // Another server's key.
    expect(new TrackingLinks('another-secret-entirely-0123456789').verify(host, p)).toBeUndefined();
    // The click's signature does not make an open, nor the reverse.
    expect(links.verify(host, `/o/${email}/${t}/${mac}.gif`)).toBeUndefined();
  });

  it('refuses a second spelling of the encoded URL and non-web targets', () => {
    const p = pathOf(links.clickUrl(base, host, id, sent, 'https://example.org/'));
    expect(links.verify(host, `${p}=`)).toBeUndefined();
    expect(links.verify(host, `${p}/extra`)).toBeUndefined();
    expect(() => links.verify(host, '/c/x/y/z/%00')).not.toThrow();
    expect(links.verify(host, '/c/')).toBeUndefined();
    expect(links.verify(host, '/o/.gif')).toBeUndefined();
    expect(links.verify(host, '/elsewhere')).toBeUndefined();
    // A javascript: URL is never followed, even if someone got it signed.
    const js = links.clickUrl(base, host, id, sent, 'javascript:alert(1)');
    expect(links.verify(host, pathOf(js))).toBeUndefined();
  });

  it('refuses an absurdly long path without work', () => {
    expect(links.verify(host, `/c/${'a'.repeat(100_000)}`)).toBeUndefined();
  });
});
