// Sender domains against a real DNS server on loopback (dns-packet): the records
// to publish, verification record by record, and sending refused until verified.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Project } from '../../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';

let dns: DnsServer;
let stack: Stack;
let p: Project;

beforeAll(async () => {
  dns = await startDnsServer();
  stack = await Stack.start({
    env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_SENDING_IPS: '192.0.2.10,2001:db8::10', POSTGATE_MX_HOST: 'mx.postgate.test' },
  });
  p = await stack.createProject('shop');
});
afterAll(async () => {
  await stack?.stop();
  await dns?.close();
});

// A new recipient each time: example.test has no MX here, so delivered mail bounces and suppresses its address.
let n = 0;
const mail = (from: string) => ({ from, to: `customer${++n}@example.test`, subject: 'Order', text: 'Thanks' });

describe('sender domains', () => {
  let domain: any;

  it('adding a domain answers every DNS record to publish', async () => {
    const r = await stack.api('POST', '/v1/domains', p.keys.live, { name: 'Shop.Test' });
    expect(r.status).toBe(201);
    domain = r.body;
    expect(domain).toMatchObject({ id: expect.any(String), name: 'shop.test', status: 'pending' });
    const by = Object.fromEntries(domain.records.map((x: any) => [x.purpose, x]));
    expect(by.dkim).toMatchObject({ type: 'TXT', name: expect.stringMatching(/^pg\d{6}\._domainkey\.shop\.test$/), status: 'pending' });
    expect(by.dkim.value).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}$/);
    expect(by.spf).toEqual(expect.objectContaining({ type: 'TXT', name: 'shop.test', value: 'v=spf1 ip4:192.0.2.10 ip6:2001:db8::10 ~all' }));
    expect(by.dmarc).toEqual(expect.objectContaining({ type: 'TXT', name: '_dmarc.shop.test', value: expect.stringMatching(/^v=DMARC1;/) }));
    expect(by.return_path_mx).toEqual(expect.objectContaining({ type: 'MX', name: 'pg-bounces.shop.test', value: 'mx.postgate.test', priority: 10 }));
    expect(by.return_path_spf).toEqual(
      expect.objectContaining({ type: 'TXT', name: 'pg-bounces.shop.test', value: 'v=spf1 ip4:192.0.2.10 ip6:2001:db8::10 -all' }),
    );
  });

  it('refuses a second copy, and names that are not domains', async () => {
    expect((await stack.api('POST', '/v1/domains', p.keys.live, { name: 'shop.test' })).body.code).toBe('CONFLICT');
    for (const name of ['localhost', 'a b.test', 'x..test', '-a.test', 'http://a.test', '']) {
      const r = await stack.api('POST', '/v1/domains', p.keys.live, { name });
      expect(r.status, name).toBe(400);
      expect(r.body.code).toBe('INVALID_REQUEST');
    }
  });

  it('sending from an unverified domain is 403 DOMAIN_NOT_VERIFIED, recorded as failed', async () => {
    const r = await stack.api('POST', '/v1/emails', p.keys.live, mail('Shop <orders@shop.test>'));
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: 'DOMAIN_NOT_VERIFIED', id: expect.any(String), error: expect.stringContaining('shop.test') });
    const email = (await stack.api('GET', `/v1/emails/${r.body.id}`, p.keys.live)).body;
    expect(email.status).toBe('failed');
    expect(email.error).toMatchObject({ code: 'DOMAIN_NOT_VERIFIED' });
    expect(email.events).toEqual([expect.objectContaining({ type: 'failed', code: 'DOMAIN_NOT_VERIFIED' })]);
    // A domain never added is refused the same way.
    expect((await stack.api('POST', '/v1/emails', p.keys.live, mail('a@elsewhere.test'))).body.code).toBe('DOMAIN_NOT_VERIFIED');
  });

  it('verification says which records pass, and verifies the domain once all do', async () => {
    let r = await stack.api('POST', `/v1/domains/${domain.id}/verify`, p.keys.live);
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('pending');
    expect(r.body.records.every((x: any) => x.status === 'failed' && x.problem)).toBe(true);

    const by = Object.fromEntries(domain.records.map((x: any) => [x.purpose, x]));
    dns.add(
      { type: 'TXT', name: by.dkim.name, value: by.dkim.value },
      { type: 'TXT', name: 'shop.test', value: 'v=spf1 ip4:192.0.2.10 ip6:2001:db8::10 include:_spf.other.test ~all' },
      { type: 'TXT', name: 'shop.test', value: 'google-site-verification=abc' },
      { type: 'MX', name: 'pg-bounces.shop.test', exchange: 'mx.postgate.test', priority: 10 },
      { type: 'TXT', name: 'pg-bounces.shop.test', value: 'v=spf1 ip4:192.0.2.99 -all' },
    );
    r = await stack.api('POST', `/v1/domains/${domain.id}/verify`, p.keys.live);
    const status = Object.fromEntries(r.body.records.map((x: any) => [x.purpose, x.status]));
    expect(status).toEqual({ dkim: 'verified', spf: 'verified', dmarc: 'failed', return_path_mx: 'verified', return_path_spf: 'failed' });
    expect(r.body.status).toBe('pending');
    expect(r.body.records.find((x: any) => x.purpose === 'return_path_spf').problem).toContain('ip4:192.0.2.10');

    dns.remove('pg-bounces.shop.test', 'TXT');
    dns.add(
      { type: 'TXT', name: 'pg-bounces.shop.test', value: by.return_path_spf.value },
      { type: 'TXT', name: '_dmarc.shop.test', value: 'v=DMARC1; p=quarantine' },
    );
    r = await stack.api('POST', `/v1/domains/${domain.id}/verify`, p.keys.live);
    expect(r.body.records.map((x: any) => x.status)).toEqual(['verified', 'verified', 'verified', 'verified', 'verified']);
    expect(r.body).toMatchObject({ status: 'verified', verified_at: expect.any(String) });

    const list = await stack.api('GET', '/v1/domains', p.keys.live);
    expect(list.body.data).toEqual([expect.objectContaining({ id: domain.id, name: 'shop.test', status: 'verified' })]);
    const sent = await stack.api('POST', '/v1/emails', p.keys.live, mail('Shop <orders@shop.test>'));
    expect(sent.status).toBe(202);
  });

  it('another project cannot see or verify the domain, and deleting it stops sending', async () => {
    const other = await stack.createProject('other-shop');
    expect((await stack.api('POST', `/v1/domains/${domain.id}/verify`, other.keys.live)).status).toBe(404);
    expect((await stack.api('GET', '/v1/domains', other.keys.live)).body.data).toEqual([]);
    expect((await stack.api('POST', '/v1/emails', other.keys.live, mail('x@shop.test'))).body.code).toBe('DOMAIN_NOT_VERIFIED');

    const del = await stack.api('DELETE', `/v1/domains/${domain.id}`, p.keys.live);
    expect(del.body).toEqual({ object: 'domain', id: domain.id, deleted: true });
    expect((await stack.api('DELETE', `/v1/domains/${domain.id}`, p.keys.live)).status).toBe(404);
    expect((await stack.api('POST', '/v1/emails', p.keys.live, mail('orders@shop.test'))).status).toBe(403);
  });

  it('the operator override marks a domain verified without DNS', async () => {
    const out = JSON.parse(await stack.cli('domain', 'verify', '--project', 'shop', '--name', 'tour.test', '--force', '--json'));
    expect(out).toMatchObject({ name: 'tour.test', status: 'verified' });
    expect((await stack.api('POST', '/v1/emails', p.keys.live, mail('hi@tour.test'))).status).toBe(202);
  });
});
