// control/webhooks/target.ts: where a webhook may go, checked at registration and again on the
// address actually dialled (DNS rebinding), with only a failure class for the project to see.
// The resolver here answers from a table; the receiver is an HTTP peer on loopback.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failureOf, WebhookTargets } from '../../../control/webhooks/target.js';
import type { Resolver } from '../../../core/dns.js';
import { AddressGuard } from '../../../core/net/address-guard.js';
import { httpPeer, type HttpPeer } from '../../helpers/http-peer.js';

/** A resolver that answers from a table (A and AAAA); a name it lacks does not exist. */
function resolver(table: Record<string, { a?: string[]; aaaa?: string[] }>): Resolver {
  const missing = () => Object.assign(new Error('queryA ENOTFOUND'), { code: 'ENOTFOUND' });
  return {
    resolve4: async (host: string) => (table[host]?.a ? table[host].a : Promise.reject(missing())),
    resolve6: async (host: string) => (table[host]?.aaaa ? table[host].aaaa : Promise.reject(missing())),
  } as unknown as Resolver;
}

const names = resolver({
  'hooks.example.com': { a: ['93.184.216.34'] },
  'internal.example.com': { a: ['10.0.0.8'] },
  'mixed.example.com': { a: ['93.184.216.34'], aaaa: ['::1'] },
  'metadata.example.com': { aaaa: ['::ffff:169.254.169.254'] },
  'receiver.test': { a: ['127.0.0.1'] },
});

describe('refusal (at registration)', () => {
  const targets = new WebhookTargets(new AddressGuard(), names);
  const refusal = (url: string) => targets.refusal(new URL(url));

  it('a public name or address may be registered; so may a name that does not resolve yet', async () => {
    expect(await refusal('https://hooks.example.com/pg')).toBeUndefined();
    expect(await refusal('https://93.184.216.34/pg')).toBeUndefined();
    expect(await refusal('https://not-yet.example.com/pg')).toBeUndefined();
  });

  it('an address that is refused, in any spelling the URL parser accepts', async () => {
    for (const url of ['http://127.0.0.1/', 'http://2130706433/', 'http://0x7f.1/', 'http://[::1]/', 'http://[::ffff:169.254.169.254]/', 'http://0.0.0.0/'])
      expect(await refusal(url), url).toMatch(/must not point to a loopback, private, link-local or reserved address/);
  });

  it('localhost by any name, and a name with any refused address among its answers', async () => {
    for (const url of ['http://localhost/', 'http://LOCALHOST./', 'http://api.localhost/'])
      expect(await refusal(url), url).toBe('url must not point to localhost');
    for (const url of ['https://internal.example.com/', 'https://mixed.example.com/', 'https://metadata.example.com/'])
      expect(await refusal(url), url).toMatch(/resolves to a loopback, private, link-local or reserved address/);
  });
});

describe('post (at each delivery)', () => {
  let peer: HttpPeer;
  beforeAll(async () => {
    peer = await httpPeer({
      '/ok': () => ({ status: 204 }),
      '/moved': () => ({ status: 302, headers: { location: 'http://169.254.169.254/' } }),
    });
  });
  afterAll(() => peer.close());
  const port = () => new URL(peer.url).port;
  const failure = (p: Promise<unknown>) =>
    p.then(
      (status) => `status ${status}`,
      (e: unknown) => failureOf(e),
    );

  it('posts the body with its headers and length, through our resolver, and answers the status', async () => {
    const allowLoopback = new WebhookTargets(new AddressGuard(['127.0.0.0/8']), names);
    expect(await allowLoopback.post(`http://receiver.test:${port()}/ok`, { 'webhook-id': 'msg_1' }, '{"a":1}', 5000)).toBe(204);
    const r = peer.requests.at(-1)!;
    expect(r).toMatchObject({ method: 'POST', path: '/ok', body: '{"a":1}' });
    expect(r.headers).toMatchObject({ 'webhook-id': 'msg_1', 'content-length': '7' });
  });

  it('never follows a redirect: the 302 is the answer', async () => {
    const allowLoopback = new WebhookTargets(new AddressGuard(['127.0.0.0/8']), names);
    expect(await allowLoopback.post(`http://127.0.0.1:${port()}/moved`, {}, '{}', 5000)).toBe(302);
  });

  it('a name that resolves to a refused address now (rebinding) is not dialled', async () => {
    const before = peer.requests.length;
    const targets = new WebhookTargets(new AddressGuard(), names);
    expect(await failure(targets.post(`http://receiver.test:${port()}/ok`, {}, '{}', 5000))).toBe('address_not_allowed');
    expect(await failure(targets.post(`http://127.0.0.1:${port()}/ok`, {}, '{}', 5000))).toBe('address_not_allowed');
    expect(await failure(targets.post(`http://localhost:${port()}/ok`, {}, '{}', 5000))).toBe('address_not_allowed');
    expect(await failure(targets.post(`http://mixed.example.com:${port()}/ok`, {}, '{}', 5000))).toBe('address_not_allowed');
    expect(peer.requests.length).toBe(before);
  });

  it('classes the other failures: no address, no connection', async () => {
    const targets = new WebhookTargets(new AddressGuard(['127.0.0.0/8']), names);
    expect(await failure(targets.post('http://nowhere.example.com/', {}, '{}', 5000))).toBe('dns_failed');
    expect(await failure(targets.post('http://127.0.0.1:1/', {}, '{}', 5000))).toBe('connection_failed');
    expect(failureOf(new Error('anything else'))).toBe('connection_failed');
  });

  it('a receiver that never answers is a timeout', async () => {
    const silent = net.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const targets = new WebhookTargets(new AddressGuard(['127.0.0.0/8']), names);
      const started = Date.now();
      expect(await failure(targets.post(`http://127.0.0.1:${(silent.address() as net.AddressInfo).port}/`, {}, '{}', 200))).toBe('timeout');
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      silent.close();
    }
  });
});
