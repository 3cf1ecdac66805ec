// auth/region.ts: the per-provider regional filter (countries from the geoip-country data the
// package ships, CIDR rules) and which address of a request counts as the end user's.
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { clientIp, connectionIp, countryOf, parseCidr, regionAllows } from '../../auth/region.js';
import type { Caller } from '../../control/api-keys/authenticate.js';

const US = '8.8.8.8';
const RU = '77.88.8.8';
const GB = '81.2.69.142';
const PRIVATE = '10.1.2.3';

it('countryOf: ISO codes from the shipped data, null for private and unknown addresses', () => {
  expect(countryOf(US)).toBe('US');
  expect(countryOf(RU)).toBe('RU');
  expect(countryOf('2a02:6b8::2:242')).toBe('RU');
  expect(countryOf(PRIVATE)).toBeNull();
});

it('parseCidr: IPv4 and IPv6 blocks; anything else is not one', () => {
  expect(parseCidr('10.0.0.0/8')).toEqual({ address: '10.0.0.0', prefix: 8, family: 'ipv4' });
  expect(parseCidr(' 2001:db8::/32 ')).toEqual({ address: '2001:db8::', prefix: 32, family: 'ipv6' });
  expect(parseCidr('10.0.0.0/0')).toMatchObject({ prefix: 0 });
  for (const bad of ['10.0.0.0', '10.0.0.0/33', '2001:db8::/129', 'example.com/8', '10.0.0.0/8/8', '10.0.0.0/-1', '/8', ''])
    expect(parseCidr(bad), bad).toBeUndefined();
});

describe('regionAllows', () => {
  it('no rule allows everyone', () => {
    expect(regionAllows({}, US)).toBe(true);
    expect(regionAllows({}, PRIVATE)).toBe(true);
  });

  it('a denied country refuses; the others pass', () => {
    const rule = { denyCountries: ['RU'] };
    expect(regionAllows(rule, RU)).toBe(false);
    expect(regionAllows(rule, '2a02:6b8::2:242')).toBe(false);
    expect(regionAllows(rule, US)).toBe(true);
    expect(regionAllows(rule, PRIVATE)).toBe(true);
  });

  it('an allow list admits only its countries, and an address of unknown country is refused', () => {
    const rule = { allowCountries: ['US', 'GB'] };
    expect(regionAllows(rule, US)).toBe(true);
    expect(regionAllows(rule, GB)).toBe(true);
    expect(regionAllows(rule, RU)).toBe(false);
    expect(regionAllows(rule, PRIVATE)).toBe(false);
  });

  it('allow CIDRs admit before the country rules (an office network abroad); deny CIDRs win over everything', () => {
    expect(regionAllows({ allowCountries: ['US'], allowCidrs: ['77.88.0.0/16'] }, RU)).toBe(true);
    expect(regionAllows({ denyCountries: ['RU'], allowCidrs: ['77.88.8.8/32'] }, RU)).toBe(true);
    expect(regionAllows({ allowCidrs: ['8.8.8.0/24'], denyCidrs: ['8.8.8.8/32'] }, US)).toBe(false);
    expect(regionAllows({ allowCountries: ['US'], denyCidrs: ['8.0.0.0/8'] }, US)).toBe(false);
  });

  it('allow CIDRs alone admit only their networks', () => {
    const rule = { allowCidrs: ['10.0.0.0/8', '2001:db8::/32'] };
    expect(regionAllows(rule, PRIVATE)).toBe(true);
    expect(regionAllows(rule, '2001:db8::1')).toBe(true);
    expect(regionAllows(rule, US)).toBe(false);
    expect(regionAllows(rule, '2001:db9::1')).toBe(false);
  });

  it('empty lists are no rule', () => {
    expect(regionAllows({ allowCountries: [], denyCountries: [], allowCidrs: [], denyCidrs: [] }, RU)).toBe(true);
  });
});

describe('the end user address', () => {
  const req = (ip: string, header?: string) => ({ ip, headers: header === undefined ? {} : { 'x-service-client-ip': header } }) as unknown as FastifyRequest;
  const caller = (scope: 'all' | 'auth') => ({ key: { scope } }) as Caller;

  it('connectionIp shows an IPv4-mapped IPv6 address as IPv4', () => {
    expect(connectionIp(req('::ffff:8.8.8.8'))).toBe(US);
    expect(connectionIp(req('::1'))).toBe('::1');
  });

  it('a server key (scope all) may name the user with X-Service-Client-IP', () => {
    expect(clientIp(req('10.0.0.1', ` ${RU} `), caller('all'))).toBe(RU);
    expect(clientIp(req('10.0.0.1', `::ffff:${RU}`), caller('all'))).toBe(RU);
  });

  it('a browser-safe key (scope auth) cannot: the header could be forged, so the connection counts', () => {
    expect(clientIp(req('10.0.0.1', RU), caller('auth'))).toBe('10.0.0.1');
  });

  it('a header that is not an address is ignored', () => {
    expect(clientIp(req('10.0.0.1', 'not-an-ip'), caller('all'))).toBe('10.0.0.1');
    expect(clientIp(req('10.0.0.1', `${RU}, ${US}`), caller('all'))).toBe('10.0.0.1');
  });
});
