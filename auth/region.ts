// The per-provider regional filter: countries from the IP-to-country database
// that the geoip-country npm package ships (GeoLite2 data, loaded on first use,
// nothing downloaded), plus CIDR rules, applied to the end user's address.
import net from 'node:net';
import { createRequire } from 'node:module';
import type { FastifyRequest } from 'fastify';
import type { Caller } from '../control/api-keys/authenticate.js';

export interface RegionRule {
  allowCountries?: string[];
  denyCountries?: string[];
  allowCidrs?: string[];
  denyCidrs?: string[];
}

const require = createRequire(import.meta.url);
let geoip: { lookup(ip: string): { country: string } | null } | undefined;

/** ISO 3166-1 alpha-2 country of an address, or null (private ranges, unknown). */
export function countryOf(ip: string): string | null {
  geoip ??= require('geoip-country') as typeof geoip;
  return geoip!.lookup(ip)?.country ?? null;
}

/** `10.0.0.0/8` → its parts, or undefined when it is not a CIDR block. */
export function parseCidr(cidr: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | undefined {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(cidr.trim());
  if (!m) return undefined;
  const v = net.isIP(m[1]!);
  const prefix = Number(m[2]);
  if (!v || prefix > (v === 4 ? 32 : 128)) return undefined;
  return { address: m[1]!, prefix, family: v === 4 ? 'ipv4' : 'ipv6' };
}

function inAny(ip: string, cidrs: string[] | undefined): boolean {
  if (!cidrs?.length) return false;
  const list = new net.BlockList();
  for (const c of cidrs) {
    const p = parseCidr(c);
    if (p) list.addSubnet(p.address, p.prefix, p.family);
  }
  return list.check(ip, net.isIP(ip) === 6 ? 'ipv6' : 'ipv4');
}

/**
 * Deny CIDRs win; then allow CIDRs admit (an office network abroad); then a
 * denied country refuses, and a non-empty allow list admits only its countries
 * (an address of unknown country is then refused too).
 */
export function regionAllows(rule: RegionRule, ip: string): boolean {
  if (inAny(ip, rule.denyCidrs)) return false;
  if (inAny(ip, rule.allowCidrs)) return true;
  const hasCountryRule = !!(rule.denyCountries?.length || rule.allowCountries?.length);
  if (!hasCountryRule) return !rule.allowCidrs?.length;
  const country = countryOf(ip);
  if (country && rule.denyCountries?.includes(country)) return false;
  if (rule.allowCountries?.length) return !!country && rule.allowCountries.includes(country);
  return true;
}

const unmapped = (ip: string) => (ip.startsWith('::ffff:') && net.isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip);

/** The address of the connection itself (IPv4-mapped IPv6 shown as IPv4). */
export const connectionIp = (req: FastifyRequest): string => unmapped(req.ip);

/**
 * The end user's address: `X-Service-Client-IP` when an app server calls with a
 * server key (scope all); a browser-safe auth-scope key could forge it, so for
 * such keys the connection's own address counts.
 */
export function clientIp(req: FastifyRequest, caller: Caller): string {
  const header = req.headers['x-service-client-ip'];
  if (caller.key.scope === 'all' && typeof header === 'string' && net.isIP(header.trim())) return unmapped(header.trim());
  return connectionIp(req);
}
