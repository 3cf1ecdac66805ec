// MTA-STS policies of recipient domains (RFC 8461 §3, §5): the `_mta-sts.<domain>` TXT over the
// gateway's resolver, the policy over HTTPS from `mta-sts.<domain>` (its certificate verified against
// the same CA store as the MXes', no redirects, a bounded size and time, never a loopback or private
// address unless the operator allows it), kept for its max_age (capped) and fetched again when the
// TXT id changes. A policy that cannot be fetched or read is no policy (mail goes as without one),
// unless an earlier one is still within its max_age: that one holds (§5.1). Kept across restarts in
// the gateway's data dir.
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import type { LookupFunction } from 'node:net';
import type { MtaStsSettings } from '../../core/config.js';
import { isMissing, type Resolver } from '../../core/dns.js';
import type { Logger } from '../../core/log.js';
import { AddressGuard } from '../../core/net/address-guard.js';
import { type Parsed, parsePolicy, parseStsRecord, type StsPolicy } from './mta-sts.js';

/** A policy file is a few lines; anything larger is refused unread past this. */
export const MAX_POLICY_BYTES = 64 * 1024;
/** A TXT answer (policy id or none) is trusted this long before DNS is asked again. */
const TXT_TTL_MS = 60_000;
/**
 * A TXT lookup that failed (a timeout, SERVFAIL) is not asked again for this long: a resolver that drops TXT
 * queries would otherwise hold every message to the domain for its whole timeout.
 */
const TXT_FAILED_MS = 30_000;
/** After a failed fetch, the same domain and id are not fetched again for this long. */
const FAILED_FETCH_MS = 5 * 60_000;
/** Domains whose policies are kept; past it the oldest fetched goes. */
const MAX_POLICIES = 50_000;

export interface StsEntry {
  id: string;
  policy: StsPolicy;
  fetchedMs: number;
  expiresMs: number;
}

export interface StsOptions {
  resolver: Resolver;
  settings: MtaStsSettings;
  /** Trusted roots for the policy host's certificate (system roots plus the operator's); undefined: node's. */
  ca: string[] | undefined;
  /** Where policies are kept across restarts; undefined: memory only. */
  file?: string;
  log?: Logger;
  now?: () => number;
  /** Each fetch's result (the gateway's metrics). */
  onFetch?: (ok: boolean) => void;
}

export class StsPolicies {
  private readonly policies = new Map<string, StsEntry>();
  private readonly txt = new Map<string, { until: number; id: Promise<Parsed<string> | undefined | 'error'> }>();
  private readonly failed = new Map<string, number>();
  private readonly fetching = new Map<string, Promise<StsPolicy | undefined>>();
  private readonly guard: AddressGuard;
  private readonly now: () => number;
  /** Policy fetches started (metrics and tests). */
  fetches = 0;

  constructor(private readonly opts: StsOptions) {
    this.guard = new AddressGuard(opts.settings.allowCidrs);
    this.now = opts.now ?? Date.now;
    this.load();
  }

  /** The policy in force for a recipient domain, undefined when it has none (or MTA-STS is off). */
  async policyFor(domain: string): Promise<StsPolicy | undefined> {
    if (!this.opts.settings.enabled) return undefined;
    const d = domain.toLowerCase().replace(/\.$/, '');
    const now = this.now();
    let kept = this.policies.get(d);
    if (kept && kept.expiresMs <= now) {
      this.policies.delete(d);
      kept = undefined;
    }
    const record = await this.record(d);
    // No (valid) record, or DNS trouble: a policy still within its max_age holds (§5.1).
    if (record === undefined || record === 'error' || !record.ok) return kept?.policy;
    if (kept && kept.id === record.value) return kept.policy;
    const failedUntil = this.failed.get(`${d} ${record.value}`);
    if (failedUntil !== undefined && failedUntil > now) return kept?.policy;
    const key = `${d} ${record.value}`;
    let pending = this.fetching.get(key);
    if (!pending) {
      pending = this.fetchAndKeep(d, record.value).finally(() => this.fetching.delete(key));
      this.fetching.set(key, pending);
    }
    return (await pending) ?? kept?.policy;
  }

  /** What is kept for a domain (tests, the operator's eye). */
  entry(domain: string): StsEntry | undefined {
    return this.policies.get(domain.toLowerCase());
  }

  private record(domain: string): Promise<Parsed<string> | undefined | 'error'> {
    const hit = this.txt.get(domain);
    if (hit && hit.until > this.now()) return hit.id;
    const id = this.opts.resolver.resolveTxt(`_mta-sts.${domain}`).then(
      (records) => parseStsRecord(records.map((chunks) => chunks.join(''))),
      (err) => (isMissing(err) ? undefined : ('error' as const)),
    );
    if (this.txt.size >= MAX_POLICIES) this.txt.delete(this.txt.keys().next().value!);
    this.txt.set(domain, { until: this.now() + TXT_TTL_MS, id });
    void id.then((r) => {
      const entry = this.txt.get(domain);
      if (r === 'error' && entry?.id === id) entry.until = Math.min(entry.until, this.now() + TXT_FAILED_MS);
    });
    return id;
  }

  private async fetchAndKeep(domain: string, id: string): Promise<StsPolicy | undefined> {
    this.fetches++;
    const got = await fetchPolicy(domain, this.opts, this.guard).catch((err: Error) => ({ ok: false as const, error: err.message }));
    this.opts.onFetch?.(got.ok);
    if (!got.ok) {
      this.failed.set(`${domain} ${id}`, this.now() + FAILED_FETCH_MS);
      if (this.failed.size > MAX_POLICIES) this.failed.delete(this.failed.keys().next().value!);
      this.opts.log?.warn({ domain, id, problem: got.error }, 'MTA-STS policy not usable; delivering as without one');
      return undefined;
    }
    const policy = got.value;
    const maxAge = Math.min(policy.maxAge, this.opts.settings.maxAgeSeconds);
    const now = this.now();
    this.policies.delete(domain);
    if (this.policies.size >= MAX_POLICIES) this.policies.delete(this.policies.keys().next().value!);
    this.policies.set(domain, { id, policy, fetchedMs: now, expiresMs: now + maxAge * 1000 });
    this.opts.log?.info({ domain, id, mode: policy.mode, mx: policy.mx, maxAge }, 'MTA-STS policy fetched');
    // Fetches are rare (once per domain and max_age): each is written at once.
    this.save();
    return policy;
  }

  private save(): void {
    const file = this.opts.file;
    if (!file) return;
    try {
      const now = this.now();
      const live = [...this.policies].filter(([, e]) => e.expiresMs > now);
      const tmp = `${file}.${process.pid}.tmp`;
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(tmp, JSON.stringify({ version: 1, policies: Object.fromEntries(live) }));
      fs.renameSync(tmp, file);
    } catch (err) {
      this.opts.log?.warn({ err, file }, 'could not keep the MTA-STS policies on disk');
    }
  }

  /** Policies kept by an earlier run; a file that does not read as ours is ignored (they are fetched again). */
  private load(): void {
    const file = this.opts.file;
    if (!file || !fs.existsSync(file)) return;
    try {
      const data = JSON.parse(fs.readFileSync(file, 'utf8')) as { version?: number; policies?: Record<string, StsEntry> };
      const now = this.now();
      for (const [domain, e] of Object.entries(data.policies ?? {})) {
        if (typeof e?.id !== 'string' || typeof e.expiresMs !== 'number' || e.expiresMs <= now) continue;
        // Checked as a fetched one is: a hand-edited file cannot slip in what no policy could say.
        const again = parsePolicy(
          [`version: STSv1`, `mode: ${e.policy?.mode}`, `max_age: ${e.policy?.maxAge}`, ...(e.policy?.mx ?? []).map((m) => `mx: ${m}`)].join('\n'),
        );
        if (!again.ok) continue;
        const cap = now + this.opts.settings.maxAgeSeconds * 1000;
        this.policies.set(domain, { id: e.id, policy: again.value, fetchedMs: e.fetchedMs, expiresMs: Math.min(e.expiresMs, cap) });
      }
    } catch (err) {
      this.opts.log?.warn({ err, file }, 'MTA-STS policies on disk not readable; they will be fetched again');
    }
  }
}

/** The policy host's address: the first of its A (then AAAA) records the guard permits. */
async function policyAddress(host: string, resolver: Resolver, guard: AddressGuard): Promise<{ address: string; family: 4 | 6 }> {
  const found: string[] = [];
  for (const family of [4, 6] as const) {
    let ips: string[] = [];
    try {
      ips = family === 4 ? await resolver.resolve4(host) : await resolver.resolve6(host);
    } catch (err) {
      if (!isMissing(err)) throw new Error(`address lookup for ${host} failed: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
    found.push(...ips);
    const ok = ips.find((ip) => guard.permits(ip));
    if (ok) return { address: ok, family };
  }
  if (!found.length) throw new Error(`${host} has no address`);
  throw new Error(`${host} resolves only to loopback or private addresses (${found.slice(0, 3).join(', ')}), which policies are not fetched from`);
}

/** GET https://mta-sts.<domain>/.well-known/mta-sts.txt and read it as a policy (§3.3). */
export async function fetchPolicy(domain: string, opts: Pick<StsOptions, 'resolver' | 'settings' | 'ca'>, guard: AddressGuard): Promise<Parsed<StsPolicy>> {
  const host = `mta-sts.${domain}`;
  const { address, family } = await policyAddress(host, opts.resolver, guard);
  // The vetted address, whatever a second lookup would say (no DNS rebinding between check and connect).
  const lookup: LookupFunction = (_name, options, cb) => {
    if ((options as { all?: boolean }).all) (cb as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]);
    else cb(null, address, family);
  };
  const { timeoutMs } = opts.settings;
  return new Promise((resolve) => {
    let settled = false;
    const done = (r: Parsed<StsPolicy>) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      req.destroy();
      resolve(r);
    };
    const req = https.request(
      {
        host,
        servername: net.isIP(host) ? undefined : host,
        port: opts.settings.port,
        path: '/.well-known/mta-sts.txt',
        method: 'GET',
        lookup,
        ca: opts.ca,
        rejectUnauthorized: true,
        agent: false,
        headers: { accept: 'text/plain', 'user-agent': 'postgate' },
      },
      (res) => {
        // §3.3: no redirects, only a 200 with a text/plain policy.
        if (res.statusCode !== 200) return done({ ok: false, error: `${host} answered HTTP ${res.statusCode}` });
        const type = String(res.headers['content-type'] ?? '');
        if (!/^text\/plain\s*(;|$)/i.test(type)) return done({ ok: false, error: `${host} answered ${JSON.stringify(type.slice(0, 60))}, not text/plain` });
        if (Number(res.headers['content-length'] ?? 0) > MAX_POLICY_BYTES)
          return done({ ok: false, error: `${host}'s policy is larger than ${MAX_POLICY_BYTES} bytes` });
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_POLICY_BYTES) return done({ ok: false, error: `${host}'s policy is larger than ${MAX_POLICY_BYTES} bytes` });
          chunks.push(c);
        });
        res.on('end', () => {
          const parsed = parsePolicy(Buffer.concat(chunks).toString('utf8'));
          done(parsed.ok ? parsed : { ok: false, error: `${host}'s policy: ${parsed.error}` });
        });
        res.on('error', (err) => done({ ok: false, error: `${host}: ${err.message}` }));
      },
    );
    const deadline = setTimeout(() => done({ ok: false, error: `${host} did not answer within ${timeoutMs} ms` }), timeoutMs);
    req.on('error', (err) => done({ ok: false, error: `${host}: ${(err as NodeJS.ErrnoException).code ?? ''} ${err.message}`.trim() }));
    req.end();
  });
}
