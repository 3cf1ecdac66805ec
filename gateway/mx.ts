// Where to deliver a domain's mail: its MX hosts by priority, each resolved to IPv4
// addresses with the same resolver (POSTGATE_DNS_SERVERS when set). No MX record
// means the domain itself is the MX (RFC 5321 §5.1); a null MX (RFC 7505) or a
// domain that does not exist is a permanent failure; DNS trouble is temporary.
import net from 'node:net';
import os from 'node:os';
import type { Resolver } from '../core/dns.js';

export interface MxRoute {
  /** IPv4 address to dial. */
  ip: string;
  /** The MX host name it came from (kept for events and TLS SNI). */
  host: string;
  priority: number;
}

export type MxLookup =
  | { kind: 'routes'; routes: MxRoute[] }
  | { kind: 'permanent'; reason: string; enhancedCode: string }
  | { kind: 'temporary'; reason: string };

const code = (err: unknown): string => String((err as NodeJS.ErrnoException)?.code ?? '');
/** NXDOMAIN comes back as ENOTFOUND; ENODATA is a name without records of that type. */
const isNoSuchDomain = (err: unknown) => code(err) === 'ENOTFOUND';
const isNoData = (err: unknown) => code(err) === 'ENODATA';

export async function lookupMx(resolver: Resolver, domain: string): Promise<MxLookup> {
  domain = domain.toLowerCase().replace(/\.$/, '');
  let exchanges: Array<{ exchange: string; priority: number }>;
  let implicit = false;
  try {
    exchanges = await resolver.resolveMx(domain);
  } catch (err) {
    if (isNoSuchDomain(err)) return { kind: 'permanent', reason: `domain ${domain} does not exist (NXDOMAIN)`, enhancedCode: '5.1.2' };
    if (!isNoData(err)) return { kind: 'temporary', reason: `MX lookup for ${domain} failed: ${code(err) || String(err)}` };
    exchanges = [];
  }
  if (exchanges.length === 1 && (exchanges[0]!.exchange === '' || exchanges[0]!.exchange === '.')) {
    return { kind: 'permanent', reason: `domain ${domain} accepts no mail (null MX)`, enhancedCode: '5.1.10' };
  }
  if (!exchanges.length) {
    implicit = true;
    exchanges = [{ exchange: domain, priority: 0 }];
  }

  const routes: MxRoute[] = [];
  let temporary = '';
  for (const mx of [...exchanges].sort((a, b) => a.priority - b.priority)) {
    const host = mx.exchange.toLowerCase().replace(/\.$/, '');
    if (net.isIPv4(host)) {
      routes.push({ ip: host, host, priority: mx.priority });
      continue;
    }
    try {
      for (const ip of await resolver.resolve4(host)) routes.push({ ip, host, priority: mx.priority });
    } catch (err) {
      if (implicit && (isNoData(err) || isNoSuchDomain(err))) {
        return { kind: 'permanent', reason: `domain ${domain} has no MX and no A record`, enhancedCode: '5.1.2' };
      }
      temporary ||= `address lookup for MX ${host} failed: ${code(err) || String(err)}`;
    }
  }
  if (routes.length) return { kind: 'routes', routes };
  // MX hosts that don't resolve are usually a DNS fault being fixed: retry rather than bounce.
  return { kind: 'temporary', reason: temporary || `no usable MX for ${domain}` };
}

/** Addresses of this machine: an MX pointing here would loop or relay through a local MTA. */
export function isLocalAddress(ip: string): boolean {
  if (ip.startsWith('127.') || ip === '0.0.0.0') return true;
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.address === ip) return true;
  }
  return false;
}
