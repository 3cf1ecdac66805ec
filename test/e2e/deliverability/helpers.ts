// Shared steps of the deliverability tests: publishing a sender domain's records (as
// POST /v1/domains gives them) in the test DNS server, and checking a received message
// the way a receiving server does, with mailauth against that DNS server.
import { Resolver } from 'node:dns/promises';
import { authenticate } from 'mailauth';
import type { DnsServer } from '../../helpers/dns-server.js';
import type { Stack } from '../../helpers/stack.js';

/** Adds the domain over the API, publishes every record it asks for, and verifies it over DNS. */
export async function publishDomain(stack: Stack, key: string, dns: DnsServer, name: string): Promise<any> {
  const created = await stack.api('POST', '/v1/domains', key, { name });
  if (created.status !== 201) throw new Error(`POST /v1/domains: ${created.status} ${JSON.stringify(created.body)}`);
  for (const r of created.body.records as Array<{ type: string; name: string; value: string; priority?: number }>) {
    if (r.type === 'MX') dns.add({ type: 'MX', name: r.name, exchange: r.value, priority: r.priority ?? 10 });
    else dns.add({ type: 'TXT', name: r.name, value: r.value });
  }
  const verified = await stack.api('POST', `/v1/domains/${created.body.id}/verify`, key);
  if (verified.body.status !== 'verified') throw new Error(`domain not verified: ${JSON.stringify(verified.body)}`);
  return verified.body;
}

/** mailauth's resolver, answered by the test DNS server. */
export function dnsResolver(dns: DnsServer) {
  const r = new Resolver({ timeout: 2000, tries: 2 });
  r.setServers([dns.address]);
  return (name: string, rrtype: string) => r.resolve(name, rrtype as 'TXT') as Promise<any>;
}

/** What the receiving server concludes about a message from 127.0.0.1. */
export async function authResults(raw: Buffer, mailFrom: string, dns: DnsServer) {
  const res = await authenticate(raw, {
    ip: '127.0.0.1',
    helo: 'postgate.test',
    sender: mailFrom,
    mta: 'mx.inbox.test',
    resolver: dnsResolver(dns),
    disableArc: true,
    disableBimi: true,
  } as never);
  return {
    dkim: res.dkim.results.map((r: any) => r.status.result),
    dkimDomain: res.dkim.results[0]?.signingDomain,
    spf: res.spf && typeof res.spf === 'object' ? res.spf.status.result : undefined,
    dmarc: res.dmarc && typeof res.dmarc === 'object' ? res.dmarc.status.result : undefined,
    headers: res.headers as string,
  };
}
