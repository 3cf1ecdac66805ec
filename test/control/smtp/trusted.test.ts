// control/smtp/trusted.ts: whether an SMTP client's address lies in a trusted network (submission
// without AUTH), an IPv4-mapped IPv6 address counting as its IPv4 address.
import { expect, it } from 'vitest';
import { trustedNetworks } from '../../../control/smtp/trusted.js';

it('addresses in the CIDRs, bare addresses as single hosts, IPv4-mapped forms too', () => {
  const trusted = trustedNetworks(['10.0.0.0/8', '192.0.2.7', 'fd00::/8', '2001:db8::1']);
  expect(trusted('10.20.30.40')).toBe(true);
  expect(trusted('::ffff:10.20.30.40')).toBe(true);
  expect(trusted('::FFFF:10.1.1.1')).toBe(true);
  expect(trusted('192.0.2.7')).toBe(true);
  expect(trusted('192.0.2.8')).toBe(false);
  expect(trusted('fd12::5')).toBe(true);
  expect(trusted('2001:db8::1')).toBe(true);
  expect(trusted('2001:db8::2')).toBe(false);
  expect(trusted('11.0.0.1')).toBe(false);
});

it('no address, or no networks, trusts nobody', () => {
  expect(trustedNetworks(['0.0.0.0/0'])(undefined)).toBe(false);
  expect(trustedNetworks([])('127.0.0.1')).toBe(false);
  expect(trustedNetworks(['127.0.0.1'])('not an ip')).toBe(false);
});
