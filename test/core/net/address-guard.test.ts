// core/net/address-guard.ts: which addresses an outbound request (a webhook) may reach. Every
// spelling of a loopback, private, link-local or reserved address is refused, IPv6 forms that
// carry one included; operators may allow named CIDRs.
import { describe, expect, it } from 'vitest';
import { AddressGuard, hostIp } from '../../../core/net/address-guard.js';

const guard = new AddressGuard();

describe('refused by default', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '0.0.0.0',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '100.64.0.1',
    '169.254.169.254',
    '192.0.0.8',
    '198.18.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    'fe80::1',
    'fe80::1%eth0',
    'fc00::1',
    'fd12:3456::1',
    'fec0::1',
    'ff02::1',
  ])('%s', (ip) => {
    expect(guard.permits(ip)).toBe(false);
  });

  it.each([
    ['IPv4-mapped', '::ffff:127.0.0.1'],
    ['IPv4-mapped, hex', '::ffff:7f00:1'],
    ['IPv4-mapped, full form', '0:0:0:0:0:ffff:a9fe:a9fe'],
    ['IPv4-compatible', '::10.0.0.1'],
    ['NAT64', '64:ff9b::169.254.169.254'],
    ['NAT64, hex', '64:ff9b::a9fe:a9fe'],
    ['NAT64 local-use', '64:ff9b:1::c0a8:101'],
    ['6to4', '2002:7f00:1::1'],
    ['6to4 of a private address', '2002:c0a8:0101::'],
  ])('%s: %s carries a refused IPv4 address', (_form, ip) => {
    expect(guard.permits(ip)).toBe(false);
  });
});

describe('permitted', () => {
  it.each([
    '8.8.8.8',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '192.0.1.1',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:0808:0808::1',
  ])('%s', (ip) => {
    expect(guard.permits(ip)).toBe(true);
  });

  it('nothing that is not an IP address', () => {
    for (const s of ['localhost', 'example.com', '', '127.1', '1.2.3.4.5']) expect(guard.permits(s), s).toBe(false);
  });
});

describe('operator exceptions', () => {
  it('an allowed CIDR opens just that range, in its mapped spellings too', () => {
    const g = new AddressGuard(['127.0.0.0/8', 'fd00::/8', '10.0.0.5']);
    expect(g.permits('127.0.0.1')).toBe(true);
    expect(g.permits('::ffff:127.0.0.1')).toBe(true);
    expect(g.permits('fd12::1')).toBe(true);
    expect(g.permits('10.0.0.5')).toBe(true);
    expect(g.permits('10.0.0.6')).toBe(false);
    expect(g.permits('169.254.169.254')).toBe(false);
  });

  it('a malformed entry is refused at start', () => {
    for (const bad of ['10.0.0.0/33', 'fd00::/129', 'example.com/8', '10.0.0.0/x', '10.0.0.0/-1'])
      expect(() => new AddressGuard([bad]), bad).toThrow(/not a CIDR/);
  });
});

it('hostIp: a URL host as the IP literal the URL parser made of it, or undefined for a name', () => {
  const host = (url: string) => hostIp(new URL(url).hostname);
  expect(host('http://2130706433/')).toBe('127.0.0.1');
  expect(host('http://0x7f000001/')).toBe('127.0.0.1');
  expect(host('http://0177.0.0.1/')).toBe('127.0.0.1');
  expect(host('http://127.1/')).toBe('127.0.0.1');
  expect(host('http://[::ffff:127.0.0.1]/')).toBe('::ffff:7f00:1');
  expect(host('http://example.com/')).toBeUndefined();
  expect(guard.permits(host('http://[::ffff:127.0.0.1]/')!)).toBe(false);
});
