// Checks each record of a domain over DNS and says which pass and which do not.
import { isMissing, type Resolver } from '../../core/dns.js';
import type { DnsRecord } from './records.js';

const norm = (s: string) => s.replace(/\s+/g, ' ').trim().toLowerCase();
const tags = (s: string) =>
  new Map(
    s
      .split(';')
      .map(
        (kv) =>
          kv
            .trim()
            .split('=')
            .map((x) => x.trim()) as [string, string],
      )
      .filter(([k]) => k),
  );

async function txt(resolver: Resolver, name: string): Promise<string[]> {
  // A long TXT record arrives as several strings; they form one value.
  return (await resolver.resolveTxt(name)).map((chunks) => chunks.join(''));
}

async function check(resolver: Resolver, r: DnsRecord): Promise<string | undefined> {
  if (r.type === 'MX') {
    const mx = await resolver.resolveMx(r.name);
    return mx.some((m) => norm(m.exchange).replace(/\.$/, '') === norm(r.value)) ? undefined : `MX of ${r.name} does not point at ${r.value}`;
  }
  if (r.type === 'CNAME') {
    // The name itself must be the alias (a CNAME is the only record at its name); a trailing dot is the same name.
    const targets = await resolver.resolveCname(r.name);
    return targets.some((t) => norm(t).replace(/\.$/, '') === norm(r.value).replace(/\.$/, '')) ? undefined : `CNAME of ${r.name} does not point at ${r.value}`;
  }
  const values = await txt(resolver, r.name);
  switch (r.purpose) {
    case 'dkim': {
      const want = tags(r.value).get('p');
      return values.some((v) => tags(v).get('p')?.replace(/\s+/g, '') === want) ? undefined : 'DKIM key not found at the selector';
    }
    case 'spf':
    case 'return_path_spf': {
      const spf = values.filter((v) => norm(v).startsWith('v=spf1'));
      if (spf.length !== 1) return spf.length ? 'more than one SPF record' : 'no SPF record';
      const mechanisms = norm(r.value)
        .split(' ')
        .filter((m) => /^(ip4|ip6|a|include):/.test(m));
      const missing = mechanisms.filter((m) => !norm(spf[0]!).split(' ').includes(m));
      return missing.length ? `SPF does not authorise ${missing.join(' ')}` : undefined;
    }
    case 'dmarc':
      return values.some((v) => norm(v).startsWith('v=dmarc1')) ? undefined : 'no DMARC record';
    default:
      return values.some((v) => norm(v) === norm(r.value)) ? undefined : 'value not found';
  }
}

export async function verifyRecords(resolver: Resolver, records: DnsRecord[]): Promise<DnsRecord[]> {
  return Promise.all(
    records.map(async (r) => {
      try {
        const problem = await check(resolver, r);
        const { problem: _old, ...rest } = r;
        return problem ? { ...rest, status: 'failed' as const, problem } : { ...rest, status: 'verified' as const };
      } catch (err) {
        return {
          ...r,
          status: 'failed' as const,
          problem: isMissing(err) ? `no ${r.type} record at ${r.name}` : `DNS lookup failed (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
        };
      }
    }),
  );
}
