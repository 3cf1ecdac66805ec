// MX routing (gateway/mx.ts) against the real test DNS server, and the small pure
// rules the gateway applies to Haraka's outcomes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lookupMx } from '../../gateway/mx.js';
import { makeResolver } from '../../core/dns.js';
import { classifyPermanent, retryDelay } from '../../gateway/outcome.js';
import { tempFailIntervals } from '../../gateway/haraka-dir.js';
import { startDnsServer, type DnsServer } from '../helpers/dns-server.js';

describe('MX lookup', () => {
  let dns: DnsServer;
  let resolver: ReturnType<typeof makeResolver>;

  beforeAll(async () => {
    dns = await startDnsServer([
      { type: 'MX', name: 'two.test', exchange: 'backup.two.test', priority: 20 },
      { type: 'MX', name: 'two.test', exchange: 'main.two.test', priority: 10 },
      { type: 'A', name: 'main.two.test', address: '192.0.2.1' },
      { type: 'A', name: 'backup.two.test', address: '192.0.2.2' },
      { type: 'A', name: 'plain.test', address: '192.0.2.3' },
      { type: 'MX', name: 'nullmx.test', exchange: '.', priority: 0 },
      { type: 'TXT', name: 'nothing.test', value: 'v=spf1 -all' },
      { type: 'MX', name: 'dangling.test', exchange: 'gone.dangling.test', priority: 10 },
      { type: 'CNAME', name: 'alias.test', target: 'plain.test' },
    ]);
    resolver = makeResolver([dns.address]);
  });
  afterAll(() => dns.close());

  it('orders MX hosts by priority and resolves each to its addresses', async () => {
    expect(await lookupMx(resolver, 'Two.Test.')).toEqual({
      kind: 'routes',
      routes: [
        { ip: '192.0.2.1', host: 'main.two.test', priority: 10 },
        { ip: '192.0.2.2', host: 'backup.two.test', priority: 20 },
      ],
    });
  });

  it('uses the domain itself without MX (implicit MX), through a CNAME too', async () => {
    expect(await lookupMx(resolver, 'plain.test')).toEqual({ kind: 'routes', routes: [{ ip: '192.0.2.3', host: 'plain.test', priority: 0 }] });
    expect(await lookupMx(resolver, 'alias.test')).toMatchObject({ kind: 'routes', routes: [{ ip: '192.0.2.3' }] });
  });

  it('fails permanently for NXDOMAIN, null MX, and a domain with neither MX nor A', async () => {
    expect(await lookupMx(resolver, 'missing.test')).toMatchObject({ kind: 'permanent', enhancedCode: '5.1.2' });
    expect(await lookupMx(resolver, 'nullmx.test')).toMatchObject({ kind: 'permanent', enhancedCode: '5.1.10' });
    expect(await lookupMx(resolver, 'nothing.test')).toMatchObject({ kind: 'permanent', enhancedCode: '5.1.2' });
  });

  it('retries when MX hosts do not resolve, or DNS does not answer', async () => {
    expect(await lookupMx(resolver, 'dangling.test')).toMatchObject({ kind: 'temporary' });
    dns.add({ type: 'A', name: 'gone.dangling.test', address: '192.0.2.9' }); // the zone is fixed
    expect(await lookupMx(resolver, 'dangling.test')).toMatchObject({ kind: 'routes', routes: [{ ip: '192.0.2.9' }] });
    const silent = makeResolver(['127.0.0.1:9']); // nothing listens on the discard port
    expect(await lookupMx(silent, 'two.test')).toMatchObject({ kind: 'temporary' });
  }, 20_000);

  it('serves TXT values longer than 255 bytes as several strings', async () => {
    const long = `v=DKIM1; k=rsa; p=${'A'.repeat(400)}`;
    dns.add({ type: 'TXT', name: 'sel._domainkey.two.test', value: long });
    const txt = await resolver.resolveTxt('sel._domainkey.two.test');
    expect(txt[0]!.length).toBe(2);
    expect(txt[0]!.join('')).toBe(long);
  });
});

describe('delivery rules', () => {
  it('tells policy refusals from unknown mailboxes', () => {
    expect(classifyPermanent('5.1.1', '550 5.1.1 User unknown')).toBe('bounced');
    expect(classifyPermanent('5.7.1', '550 5.7.1 Message rejected')).toBe('rejected');
    expect(classifyPermanent('', '554 Message blocked: listed on a DNSBL')).toBe('rejected');
    expect(classifyPermanent('', '550 No such user here')).toBe('bounced');
  });

  it('takes retry delays in order and repeats the last', () => {
    expect([1, 2, 3, 4].map((n) => retryDelay([60, 300], n))).toEqual([60, 300, 300, 300]);
  });

  it("sizes Haraka's retry list so the maxTempFailures-th failure gives up", () => {
    expect(tempFailIntervals([1], 4)).toBe('5s,5s,5s');
    expect(tempFailIntervals([60, 300], 4)).toBe('60s,300s,300s');
    expect(tempFailIntervals([60], 1)).toBe('none');
  });
});
