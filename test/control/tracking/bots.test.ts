import { describe, expect, it } from 'vitest';
import { BurstWatch, BURST_MS, CLICK_SCANNER_MS, judge, truncateIp } from '../../../control/tracking/bots.js';

const CHROME = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';
const sentAt = 1_000_000;
const later = sentAt + 3_600_000;
const fetch = (o: Partial<Parameters<typeof judge>[0]>) =>
  judge({ kind: 'open', method: 'GET', userAgent: CHROME, ip: '203.0.113.9', sentAt, at: later, ...o });

describe('judge', () => {
  it('takes a browser GET an hour later for a person', () => {
    expect(fetch({})).toEqual({ agent: 'person' });
    expect(fetch({ kind: 'click' })).toEqual({ agent: 'person' });
  });

  it('flags HEAD requests and missing user agents', () => {
    expect(fetch({ method: 'HEAD' })).toEqual({ agent: 'scanner', reason: 'HEAD request' });
    expect(fetch({ userAgent: '' }).agent).toBe('scanner');
  });

  it("flags Google's and Yahoo's image proxies as proxies", () => {
    expect(fetch({ userAgent: 'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)' })).toEqual({
      agent: 'proxy',
      reason: 'Google image proxy',
    });
    expect(fetch({ userAgent: 'YahooMailProxy; https://help.yahoo.com/kb/yahoo-mail-proxy-SLN28749.html' }).agent).toBe('proxy');
  });

  it('flags Apple Mail Privacy Protection opens by user agent and by address', () => {
    expect(fetch({ userAgent: 'Mozilla/5.0' })).toEqual({ agent: 'scanner', reason: 'Apple Mail Privacy Protection' });
    expect(fetch({ ip: '17.58.100.1' }).reason).toBe('Apple Mail Privacy Protection');
    expect(fetch({ ip: '::ffff:17.58.100.1' }).reason).toBe('Apple Mail Privacy Protection');
    // A click from Apple's network is a person on a Mac at Apple, not the prefetch.
    expect(fetch({ kind: 'click', ip: '17.58.100.1' }).agent).toBe('person');
  });

  it('flags scanners and HTTP libraries by user agent', () => {
    for (const ua of ['Barracuda Sentinel (EE)', 'python-requests/2.31', 'curl/8.4.0', 'Go-http-client/1.1', 'Googlebot/2.1', 'Mozilla/5.0 HeadlessChrome/120'])
      expect(fetch({ userAgent: ua, kind: 'click' }).agent, ua).toBe('scanner');
  });

  it('flags a click within seconds of sending', () => {
    expect(fetch({ kind: 'click', at: sentAt + CLICK_SCANNER_MS - 1 })).toEqual({ agent: 'scanner', reason: 'clicked within seconds of sending' });
    expect(fetch({ kind: 'click', at: sentAt + CLICK_SCANNER_MS }).agent).toBe('person');
    // An open that soon is a person reading at once: not judged by time.
    expect(fetch({ kind: 'open', at: sentAt + 1 }).agent).toBe('person');
  });
});

describe('BurstWatch', () => {
  it('flags the third different link of one email clicked within seconds from one network', () => {
    const w = new BurstWatch();
    expect(w.click('e1', 'n', 'https://a/', 0)).toBe(false);
    expect(w.click('e1', 'n', 'https://a/', 100)).toBe(false);
    expect(w.click('e1', 'n', 'https://b/', 200)).toBe(false);
    expect(w.click('e1', 'n', 'https://c/', 300)).toBe(true);
    expect(w.click('e2', 'n', 'https://c/', 300)).toBe(false);
    expect(w.click('e1', 'other', 'https://d/', 300)).toBe(false);
    // Spread out: a person reading.
    expect(w.click('e3', 'n', 'https://a/', 0)).toBe(false);
    expect(w.click('e3', 'n', 'https://b/', BURST_MS)).toBe(false);
    expect(w.click('e3', 'n', 'https://c/', 2 * BURST_MS)).toBe(false);
  });

  it('stays bounded', () => {
    const w = new BurstWatch(10);
    for (let i = 0; i < 1000; i++) w.click(`e${i}`, 'n', 'l', i);
    expect((w as unknown as { recent: Map<string, unknown> }).recent.size).toBeLessThanOrEqual(10);
  });
});

describe('truncateIp', () => {
  it('keeps an IPv4 /24 and an IPv6 /48, never the whole address', () => {
    expect(truncateIp('203.0.113.77')).toBe('203.0.113.0/24');
    expect(truncateIp('::ffff:198.51.100.4')).toBe('198.51.100.0/24');
    expect(truncateIp('2001:db8:abcd:12:34::1')).toBe('2001:db8:abcd::/48');
    expect(truncateIp('2001:db8::1')).toBe('2001:db8:0::/48');
    expect(truncateIp('::1')).toBe('0:0:0::/48');
    expect(truncateIp('garbage')).toBe('');
  });
});
