// control/inbound/links.ts: signed, short-lived download links; any change to a link, another project,
// another part or an expired link does not check.
import { afterEach, describe, expect, it } from 'vitest';
import { clock } from '../../../core/clock.js';
import { DownloadLinks, LINK_TTL_MS } from '../../../control/inbound/links.js';

const links = new DownloadLinks('s'.repeat(32), 'https://mail.example.test');
const query = (url: string) => Object.fromEntries(new URL(url).searchParams);

afterEach(() => clock.setOffset(0));

describe('DownloadLinks', () => {
  it('an attachment link and a raw link, each for an hour', () => {
    const now = clock.now();
    const a = links.sign('p1', 'e1', 'a1', now);
    expect(a.url).toMatch(/^https:\/\/mail\.example\.test\/downloads\/received\/e1\/attachments\/a1\?project=p1&expires=\d+&signature=[\w-]{43}$/);
    expect(a.expiresAt).toBeGreaterThan(now + LINK_TTL_MS - 1000);
    expect(links.check(query(a.url), 'e1', 'a1')).toBe(true);
    const raw = links.sign('p1', 'e1', 'raw');
    expect(raw.url).toContain('/downloads/received/e1/raw?');
    expect(links.check(query(raw.url), 'e1', 'raw')).toBe(true);
  });

  it('another email, part, project, expiry or signature does not check; nor a missing field', () => {
    const q = query(links.sign('p1', 'e1', 'a1').url);
    expect(links.check(q, 'e2', 'a1')).toBe(false);
    expect(links.check(q, 'e1', 'a2')).toBe(false);
    expect(links.check(q, 'e1', 'raw')).toBe(false);
    expect(links.check({ ...q, project: 'p2' }, 'e1', 'a1')).toBe(false);
    expect(links.check({ ...q, expires: String(Number(q.expires) + 1) }, 'e1', 'a1')).toBe(false);
    expect(links.check({ ...q, signature: `${q.signature!.slice(0, -1)}A` === q.signature ? 'x' : `${q.signature!.slice(0, -1)}A` }, 'e1', 'a1')).toBe(false);
    expect(links.check({ ...q, expires: 'soon' }, 'e1', 'a1')).toBe(false);
    expect(links.check({ project: q.project, expires: q.expires }, 'e1', 'a1')).toBe(false);
    expect(new DownloadLinks('t'.repeat(32), 'https://mail.example.test').check(q, 'e1', 'a1')).toBe(false);
  });

  it('expires after an hour', () => {
    const q = query(links.sign('p1', 'e1', 'a1').url);
    clock.setOffset(LINK_TTL_MS - 60_000);
    expect(links.check(q, 'e1', 'a1')).toBe(true);
    clock.setOffset(LINK_TTL_MS + 1000);
    expect(links.check(q, 'e1', 'a1')).toBe(false);
  });
});
