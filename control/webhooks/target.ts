// Where a webhook may be sent, checked twice: when it is registered, and on the
// address actually dialled (a name may resolve elsewhere by then: DNS rebinding).
// The project only ever sees a failure class, never a socket error: per-target
// errors would turn the deliveries list into a port scanner.
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { type AddressGuard, hostIp } from '../../core/net/address-guard.js';
import type { Resolver } from '../../core/dns.js';

/** What a failed delivery reports to the project. */
export type FailureClass = 'address_not_allowed' | 'dns_failed' | 'connection_failed' | 'timeout' | `HTTP ${number}`;

class TargetError extends Error {
  constructor(
    readonly failure: FailureClass,
    detail: string,
  ) {
    super(detail);
  }
}

const isLocalName = (host: string) => /(^|\.)localhost\.?$/i.test(host);

export class WebhookTargets {
  constructor(
    private readonly guard: AddressGuard,
    private readonly resolver: Resolver,
  ) {}

  /** Every address a name resolves to (A and AAAA); empty when it has none. */
  private async addresses(host: string): Promise<string[]> {
    const settled = await Promise.allSettled([this.resolver.resolve4(host), this.resolver.resolve6(host)]);
    return settled.flatMap((s) => (s.status === 'fulfilled' ? s.value : []));
  }

  /** Why this URL may not be registered, or undefined when it may. */
  async refusal(url: URL): Promise<string | undefined> {
    const ip = hostIp(url.hostname);
    if (ip) return this.guard.permits(ip) ? undefined : 'url must not point to a loopback, private, link-local or reserved address';
    if (isLocalName(url.hostname)) return 'url must not point to localhost';
    // A name that does not resolve yet may be registered; it is checked again at each delivery.
    const ips = await this.addresses(url.hostname);
    return ips.some((a) => !this.guard.permits(a)) ? 'url resolves to a loopback, private, link-local or reserved address' : undefined;
  }

  /** Resolves through our resolver and hands the socket only an allowed address. */
  private readonly lookup: LookupFunction = (host, options, cb) => {
    const all = typeof options === 'object' && options.all;
    const fail = (e: TargetError) => (cb as (err: Error) => void)(e);
    if (isLocalName(host)) return fail(new TargetError('address_not_allowed', `${host} is local`));
    this.addresses(host).then(
      (ips) => {
        if (!ips.length) return fail(new TargetError('dns_failed', `${host} has no address`));
        const ok = ips.filter((a) => this.guard.permits(a));
        if (ok.length < ips.length || !ok.length) return fail(new TargetError('address_not_allowed', `${host} resolves to a refused address`));
        const family = (a: string) => (a.includes(':') ? 6 : 4);
        if (all)
          (cb as (e: null, a: Array<{ address: string; family: number }>) => void)(
            null,
            ok.map((address) => ({ address, family: family(address) })),
          );
        else cb(null, ok[0]!, family(ok[0]!));
      },
      (err: Error) => fail(new TargetError('dns_failed', err.message)),
    );
  };

  /**
   * POSTs body to url; resolves the status, never follows a redirect. Rejects with an Error whose
   * `failure` is the class to report and whose message is the detail for the operator's log.
   */
  post(url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const u = new URL(url);
      const ip = hostIp(u.hostname);
      if (ip && !this.guard.permits(ip)) return reject(new TargetError('address_not_allowed', `${ip} is refused`));
      const mod = u.protocol === 'https:' ? https : http;
      const req = mod.request(u, {
        method: 'POST',
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
        lookup: this.lookup,
        timeout: timeoutMs,
        agent: false,
      });
      const timer = setTimeout(() => req.destroy(new TargetError('timeout', `no answer in ${timeoutMs} ms`)), timeoutMs);
      req.on('timeout', () => req.destroy(new TargetError('timeout', `idle for ${timeoutMs} ms`)));
      req.on('response', (res) => {
        clearTimeout(timer);
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', (err) => {
        clearTimeout(timer);
        reject(err instanceof TargetError ? err : new TargetError('connection_failed', (err as NodeJS.ErrnoException).code ?? err.message));
      });
      req.end(body);
    });
  }
}

/** The class of a failure thrown by WebhookTargets.post. */
export const failureOf = (err: unknown): FailureClass => (err instanceof TargetError ? err.failure : 'connection_failed');
