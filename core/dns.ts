// One way to ask DNS: node's resolver, pointed at POSTGATE_DNS_SERVERS when set
// (host:port list; it falls back to TCP for long answers such as DKIM keys).
import { promises as dns } from 'node:dns';

export type Resolver = dns.Resolver;

/** Short timeouts by default: callers (hooks, requests) wait on it, and a failed lookup is retried anyway. */
export function makeResolver(servers: readonly string[], opts: { timeout?: number; tries?: number } = {}): Resolver {
  const r = new dns.Resolver({ timeout: opts.timeout ?? 3000, tries: opts.tries ?? 2 });
  if (servers.length) r.setServers([...servers]);
  return r;
}

/** True for the errors that mean "no such record" rather than "DNS is broken". */
export const isMissing = (err: unknown): boolean => ['ENOTFOUND', 'ENODATA', 'ENONAME', 'NXDOMAIN'].includes((err as NodeJS.ErrnoException).code ?? '');
