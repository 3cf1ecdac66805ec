// The get_mx hook (gateway/hooks/mx.ts) against a DNS server on loopback: routes handed to Haraka
// (address, delivery port, priority, MX name, our EHLO name) with the MX names noted for events;
// permanent failures DENY and temporary ones DENYSOFT with the reason noted; an MX that is this host
// refused as a mail loop on port 25; and the shared cache (routes kept, failures not).
// (The lookup itself, gateway/mx.ts: test/gateway/mx.test.ts.)
import constants from 'haraka-constants';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HarakaMx, HMailItem } from '../../../gateway/haraka.js';
import type { MxHook } from '../../../gateway/hooks/mx.js';
import { MX_FAILURE, MX_NAMES } from '../../../gateway/outcome.js';
import { type DnsServer, startDnsServer } from '../../helpers/dns-server.js';

let dns: DnsServer;
let hook: MxHook;
let cached: (domain: string) => Promise<unknown>;

beforeAll(async () => {
  dns = await startDnsServer([
    { type: 'MX', name: 'inbox.test', exchange: 'mx1.inbox.test', priority: 10 },
    { type: 'MX', name: 'inbox.test', exchange: 'mx2.inbox.test', priority: 20 },
    { type: 'A', name: 'mx1.inbox.test', address: '198.51.100.1' },
    { type: 'A', name: 'mx2.inbox.test', address: '198.51.100.2' },
    { type: 'MX', name: 'self.test', exchange: 'mx.self.test' },
    { type: 'A', name: 'mx.self.test', address: '127.0.0.1' },
    { type: 'MX', name: 'null.test', exchange: '.', priority: 0 },
  ]);
  // The gateway reads its config from the environment, as in a gateway process (port 25: loops refused).
  process.env.POSTGATE_DNS_SERVERS = dns.address;
  process.env.POSTGATE_DELIVERY_PORT = '25';
  process.env.POSTGATE_MX_HOST = 'out.postgate.test';
  process.env.POSTGATE_LOG_LEVEL = 'silent';
  const mod = await import('../../../gateway/hooks/mx.js');
  hook = mod.mxHook();
  cached = mod.cachedLookupMx();
});
afterAll(() => dns?.close());

const hmail = () => ({ notes: {}, todo: { notes: { email_id: 'em_1' } } }) as unknown as HMailItem;
const run = (h: HMailItem, domain: string) => new Promise<[number | undefined, unknown]>((resolve) => hook((code, arg) => resolve([code, arg]), h, domain));

describe('get_mx hook', () => {
  it('hands Haraka every route in order, dialled on the delivery port with our EHLO name, and notes the MX names', async () => {
    const h = hmail();
    const [code, mxs] = await run(h, 'inbox.test');
    expect(code).toBe(constants.ok);
    expect(mxs as HarakaMx[]).toEqual([
      { exchange: '198.51.100.1', port: 25, priority: 10, from_dns: 'mx1.inbox.test', bind_helo: 'out.postgate.test' },
      { exchange: '198.51.100.2', port: 25, priority: 20, from_dns: 'mx2.inbox.test', bind_helo: 'out.postgate.test' },
    ]);
    expect(h.notes[MX_NAMES]).toEqual({ '198.51.100.1': 'mx1.inbox.test', '198.51.100.2': 'mx2.inbox.test' });
    expect(h.notes[MX_FAILURE]).toBeUndefined();
  });

  it('a domain that does not exist is a permanent failure: DENY, with the reason and 5.1.2 noted', async () => {
    const h = hmail();
    const [code, reason] = await run(h, 'nowhere.test');
    expect(code).toBe(constants.deny);
    expect(reason).toMatch(/NXDOMAIN/);
    expect(h.notes[MX_FAILURE]).toEqual({ reason, enhancedCode: '5.1.2' });
  });

  it('a null MX refuses mail permanently (5.1.10)', async () => {
    const h = hmail();
    const [code] = await run(h, 'null.test');
    expect(code).toBe(constants.deny);
    expect(h.notes[MX_FAILURE]).toMatchObject({ enhancedCode: '5.1.10' });
  });

  it('on port 25 an MX that is this host is a mail loop, refused permanently (5.4.6)', async () => {
    const h = hmail();
    const [code, reason] = await run(h, 'self.test');
    expect(code).toBe(constants.deny);
    expect(reason).toBe('every MX of self.test is this host (mail loop)');
    expect(h.notes[MX_FAILURE]).toEqual({ reason, enhancedCode: '5.4.6' });
  });

  it('clears what an earlier attempt noted', async () => {
    const h = hmail();
    await run(h, 'nowhere.test');
    expect(h.notes[MX_FAILURE]).toBeDefined();
    dns.add({ type: 'MX', name: 'nowhere.test', exchange: 'mx1.inbox.test' });
    try {
      const [code] = await run(h, 'nowhere.test');
      expect(code).toBe(constants.ok);
      expect(h.notes[MX_FAILURE]).toBeUndefined();
      expect(h.notes[MX_NAMES]).toEqual({ '198.51.100.1': 'mx1.inbox.test' });
    } finally {
      dns.remove('nowhere.test');
    }
  });

  it('keeps found routes (a burst asks DNS once) but never a failure, and ignores case', async () => {
    dns.add({ type: 'MX', name: 'cache.test', exchange: 'mx1.inbox.test' });
    const first = cached('cache.test');
    expect(cached('CACHE.test')).toBe(first);
    await first;
    dns.remove('cache.test');
    // Still the kept routes although the domain is gone from DNS now.
    const [code] = await run(hmail(), 'cache.test');
    expect(code).toBe(constants.ok);

    const failed = cached('gone.test');
    await failed;
    await new Promise((r) => setImmediate(r));
    expect(cached('gone.test')).not.toBe(failed);
  });

  it('the same lookup function is shared by every caller (pacing and get_mx)', async () => {
    const mod = await import('../../../gateway/hooks/mx.js');
    expect(mod.cachedLookupMx()).toBe(cached);
  });
});
