// Webhook SSRF: a project must not make postgate POST to loopback, private or
// link-local addresses (its own admin API, the gateway's gRPC port, cloud metadata),
// in any spelling, through DNS rebinding or through a redirect; and the deliveries
// list must not report socket errors (a port scanner).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, sleep, type Project } from '../../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { AddressGuard } from '../../../core/net/address-guard.js';

let stack: Stack;
let p: Project;
let dns: DnsServer;
const hits: string[] = [];
let loopback: http.Server; // a service on 127.0.0.1 that must never be reached
let allowed: http.Server; // an operator-allowed internal receiver on 127.0.0.2
let closedPort: number;

const listen = (server: http.Server, host: string) => new Promise<number>((r) => server.listen(0, host, () => r((server.address() as AddressInfo).port)));

beforeAll(async () => {
  loopback = http.createServer((req, res) => {
    hits.push(`loopback ${req.method} ${req.url}`);
    res.end();
  });
  const lport = await listen(loopback, '127.0.0.1');
  allowed = http.createServer((req, res) => {
    hits.push(`allowed ${req.url}`);
    res.writeHead(302, { location: `http://127.0.0.1:${lport}/redirected` }).end();
  });
  await listen(allowed, '127.0.0.2');
  const probe = http.createServer();
  closedPort = await listen(probe, '127.0.0.2');
  probe.close();
  dns = await startDnsServer([
    { type: 'A', name: 'rebind.test', address: '203.0.113.7' },
    { type: 'A', name: 'inside.test', address: '10.1.2.3' },
  ]);
  stack = await Stack.start({
    env: { POSTGATE_DNS_SERVERS: dns.address },
    config: { webhooks: { retryDelays: [1], maxAgeSeconds: 3600, timeoutMs: 2000, allowCidrs: ['127.0.0.2/32'] } },
  });
  p = await stack.createProject('ssrf');
  await stack.verifyDomain('ssrf', 'ssrf.test');
});
afterAll(async () => {
  await stack?.stop();
  loopback?.close();
  allowed?.close();
  await dns?.close();
});

async function deliveriesOf(id: string, pred: (d: any) => boolean): Promise<any[]> {
  for (const until = Date.now() + 15_000; Date.now() < until; await sleep(100)) {
    const view = (await stack.api('GET', `/v1/webhooks/${id}`, p.keys.live)).body;
    if (view.deliveries?.some(pred)) return view.deliveries;
  }
  throw new Error('no delivery attempt was recorded');
}

const send = () => stack.api('POST', '/v1/emails', p.keys.live, { from: 'a@ssrf.test', to: 'x@example.test', subject: 's', text: 't' });

describe('webhook targets', () => {
  it('refuses loopback, private, link-local and unspecified targets in every spelling', async () => {
    const port = (loopback.address() as AddressInfo).port;
    const urls = [
      `http://127.0.0.1:${port}/`,
      `http://localhost:${port}/`,
      'http://LOCALHOST./x',
      'http://api.localhost/',
      'http://0.0.0.0/',
      'http://[::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::ffff:7f00:1]/',
      'http://[::]/',
      'http://2130706433/',
      'http://0x7f000001/',
      'http://0177.0.0.1/',
      'http://127.1/',
      'http://10.0.0.5/',
      'http://172.16.3.4/',
      'http://192.168.1.1/',
      'http://100.64.0.1/',
      'http://169.254.169.254/latest/meta-data/',
      'http://[fe80::1]/',
      'http://[fd00::1]/',
      'http://[64:ff9b::a00:1]/',
      'http://inside.test/',
    ];
    for (const url of urls) {
      const r = await stack.api('POST', '/v1/webhooks', p.keys.live, { url });
      expect([url, r.status, r.body.code]).toEqual([url, 400, 'INVALID_REQUEST']);
    }
    // The operator's allowance admits exactly the named range.
    const ok = await stack.api('POST', '/v1/webhooks', p.keys.live, { url: `http://127.0.0.2:${closedPort}/` });
    expect(ok.status).toBe(201);
    await stack.api('DELETE', `/v1/webhooks/${ok.body.id}`, p.keys.live);
  });

  it('checks the address it dials: a name rebound to loopback after registration is never reached', async () => {
    const port = (loopback.address() as AddressInfo).port;
    const r = await stack.api('POST', '/v1/webhooks', p.keys.live, { url: `http://rebind.test:${port}/hook` });
    expect(r.status).toBe(201);
    dns.remove('rebind.test');
    dns.add({ type: 'A', name: 'rebind.test', address: '127.0.0.1' });
    await send();
    const deliveries = await deliveriesOf(r.body.id, (d) => d.attempt >= 1);
    expect(deliveries.find((d) => d.attempt >= 1).last_error).toBe('address_not_allowed');
    expect(hits.filter((h) => h.startsWith('loopback'))).toEqual([]);
    await stack.api('DELETE', `/v1/webhooks/${r.body.id}`, p.keys.live);
  });

  it('does not follow redirects, and reports failure classes, not socket errors', async () => {
    const redirecting = await stack.api('POST', '/v1/webhooks', p.keys.live, { url: `http://127.0.0.2:${(allowed.address() as AddressInfo).port}/hook` });
    const closed = await stack.api('POST', '/v1/webhooks', p.keys.live, { url: `http://127.0.0.2:${closedPort}/hook` });
    await send();
    const a = await deliveriesOf(redirecting.body.id, (d) => d.attempt >= 1);
    const b = await deliveriesOf(closed.body.id, (d) => d.attempt >= 1);
    expect(a.find((d) => d.attempt >= 1).last_error).toBe('HTTP 302');
    expect(b.find((d) => d.attempt >= 1).last_error).toBe('connection_failed');
    expect(hits).toContain('allowed /hook');
    expect(hits.filter((h) => h.startsWith('loopback'))).toEqual([]);
  });
});

describe('AddressGuard', () => {
  const guard = new AddressGuard();
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '0.0.0.0',
    '10.0.0.1',
    '172.31.255.255',
    '192.168.0.1',
    '100.64.0.1',
    '169.254.169.254',
    '224.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::127.0.0.1',
    '::ffff:10.0.0.1',
    '64:ff9b::7f00:1',
    '2002:7f00:1::',
    'fe80::1',
    'fd12:3456::1',
    'ff02::1',
    'not-an-ip',
  ])('refuses %s', (ip) => expect(guard.permits(ip)).toBe(false));
  it.each(['8.8.8.8', '203.0.113.7', '2001:4860:4860::8888', '::ffff:8.8.8.8', '64:ff9b::808:808'])('permits %s', (ip) => expect(guard.permits(ip)).toBe(true));
  it('admits operator CIDRs and refuses malformed ones', () => {
    expect(new AddressGuard(['10.1.0.0/16']).permits('10.1.2.3')).toBe(true);
    expect(new AddressGuard(['10.1.0.0/16']).permits('10.2.0.1')).toBe(false);
    expect(() => new AddressGuard(['10.1.0.0/33'])).toThrow(/CIDR/);
    expect(() => new AddressGuard(['nope'])).toThrow(/CIDR/);
  });
});
