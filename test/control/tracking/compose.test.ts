import { describe, expect, it } from 'vitest';
import { trackedHtml, trackingOf, trackingReady } from '../../../control/tracking/compose.js';
import { TrackingLinks } from '../../../control/tracking/links.js';
import type { StoredRequest } from '../../../control/mail/vocabulary.js';

const links = new TrackingLinks('another-server-secret-0123456789abc');
const req = (o: Partial<StoredRequest> = {}): StoredRequest => ({
  from: 'a@example.com',
  to: ['b@example.org'],
  cc: [],
  bcc: [],
  reply_to: [],
  subject: 's',
  tags: [],
  headers: {},
  bulk: false,
  ...o,
});
const id = '0192b7a4-1111-7abc-8def-0123456789ab';
const settings = { openTracking: true, clickTracking: false, trackingSubdomain: 'links' };

describe('trackingOf', () => {
  it("takes the domain's settings, each overridden by the email's", () => {
    expect(trackingOf('Example.com', settings, req(), true)).toEqual({ open: true, click: false, host: 'links.example.com' });
    expect(trackingOf('example.com', settings, req({ tracking: { click: true } }), true)).toEqual({ open: true, click: true, host: 'links.example.com' });
    expect(trackingOf('example.com', settings, req({ tracking: { open: false } }), true)).toEqual({ open: false, click: false, host: 'links.example.com' });
  });
});

describe('trackingReady', () => {
  it('tracks nothing until the tracking CNAME of the current host has verified', () => {
    expect(trackingOf('example.com', settings, req({ tracking: { open: true, click: true } }), false)).toMatchObject({ open: false, click: false });
    const rec = (name: string, status: string, purpose = 'tracking') => ({ purpose, name, status });
    expect(trackingReady([rec('links.example.com', 'verified')], 'links.example.com')).toBe(true);
    expect(trackingReady([rec('Links.Example.com', 'verified')], 'links.example.com')).toBe(true);
    expect(trackingReady([rec('links.example.com', 'pending')], 'links.example.com')).toBe(false);
    expect(trackingReady([rec('t.example.com', 'verified')], 'links.example.com')).toBe(false);
    expect(trackingReady([rec('links.example.com', 'verified', 'dkim')], 'links.example.com')).toBe(false);
  });
});

describe('trackedHtml', () => {
  const t = { open: true, click: true, host: 'links.example.com' };
  it('rewrites links through the tracking host and adds the pixel; both verify', () => {
    const out = trackedHtml('<body><a href="https://shop.example/?a=1&amp;b=2">x</a></body>', t, links, true, id, 1_700_000_000_000)!;
    const hrefs = [...out.matchAll(/(?:href|src)="([^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'));
    expect(hrefs).toHaveLength(2);
    expect(links.verify('links.example.com', new URL(hrefs[0]!).pathname)).toMatchObject({ kind: 'click', url: 'https://shop.example/?a=1&b=2' });
    expect(links.verify('links.example.com', new URL(hrefs[1]!).pathname)).toMatchObject({ kind: 'open', emailId: id });
    expect(hrefs.every((h) => h.startsWith('https://links.example.com/'))).toBe(true);
  });

  it('leaves links already on the tracking host, and html without tracking', () => {
    const html = '<a href="https://links.example.com/c/x">x</a>';
    expect(trackedHtml(html, { ...t, open: false }, links, false, id, 0)).toBe(html);
    expect(trackedHtml(html, { ...t, open: false, click: false }, links, false, id, 0)).toBe(html);
    expect(trackedHtml(undefined, t, links, false, id, 0)).toBeUndefined();
  });

  it('uses http when told', () => {
    expect(trackedHtml('<a href="https://a.example/">x</a>', { ...t, open: false }, links, false, id, 0)).toContain('href="http://links.example.com/c/');
  });
});
