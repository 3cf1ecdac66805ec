// get_mx: routes for the recipient domain (gateway/mx.ts), dialled on POSTGATE_DELIVERY_PORT.
// A permanent lookup failure answers DENY (Haraka bounces: a 'bounced' event), a
// temporary one DENYSOFT (Haraka retries: a 'deferred' event); the reason is left in
// hmail.notes for those events.
import constants from 'haraka-constants';
import type { HarakaMx, HMailItem, Next } from '../haraka.js';
import { isLocalAddress, lookupMx, type MxLookup } from '../mx.js';
import { makeResolver } from '../../core/dns.js';
import { MX_FAILURE, MX_NAMES, type MxFailure } from '../outcome.js';
import { gatewayContext } from '../runtime.js';
import { tlsRouting } from '../tls/routing.js';

export type MxHook = (next: Next, hmail: HMailItem, domain: string) => void;

/**
 * Routes found are kept this long, so a burst of mail to one domain asks DNS once rather
 * than twice per message (MX, then each host's address). Failures are never kept.
 */
const ROUTES_TTL_MS = 30_000;
const ROUTES_KEPT = 10_000;

let shared: ((domain: string) => Promise<MxLookup>) | undefined;

/** The gateway's one MX lookup with its cache: get_mx and pacing (which groups domains by MX host) share it. */
export function cachedLookupMx(): (domain: string) => Promise<MxLookup> {
  if (shared) return shared;
  const resolver = makeResolver(gatewayContext().config.dnsServers);
  const cache = new Map<string, { until: number; lookup: Promise<MxLookup> }>();
  shared = (domain) => {
    const key = domain.toLowerCase();
    const hit = cache.get(key);
    if (hit && hit.until > Date.now()) return hit.lookup;
    const lookup = lookupMx(resolver, key);
    if (cache.size >= ROUTES_KEPT) cache.delete(cache.keys().next().value!);
    cache.set(key, { until: Date.now() + ROUTES_TTL_MS, lookup });
    lookup.then(
      (l) => l.kind !== 'routes' && cache.delete(key),
      () => cache.delete(key),
    );
    return lookup;
  };
  return shared;
}

export function mxHook(): MxHook {
  const { config, log } = gatewayContext();
  const port = config.deliveryPort;
  // On port 25 an MX that is this machine would loop, or relay through a local MTA.
  // Any other port is a lab set-up whose test MX listens on loopback.
  const allowLocal = port !== 25;
  // Haraka fills in the EHLO name itself except under NODE_ENV=test (which test runners set).
  const helo = config.mxHost;

  const routesOf = (lookup: MxLookup, domain: string): MxLookup => {
    if (lookup.kind !== 'routes' || allowLocal) return lookup;
    const routes = lookup.routes.filter((r) => !isLocalAddress(r.ip));
    if (routes.length) return { kind: 'routes', routes };
    return { kind: 'permanent', reason: `every MX of ${domain} is this host (mail loop)`, enhancedCode: '5.4.6' };
  };

  const cachedLookup = cachedLookupMx();
  // Enforced TLS and MTA-STS (gateway/tls): what this attempt requires, and the MX hosts a policy allows.
  const tls = tlsRouting();

  return (next, hmail, domain) => {
    delete hmail.notes[MX_NAMES];
    delete hmail.notes[MX_FAILURE];
    cachedLookup(domain)
      .then((lookup) => routesOf(lookup, domain))
      .then((lookup) => tls.route(hmail, domain, lookup))
      .then(
        (lookup) => {
          if (lookup.kind === 'routes') {
            hmail.notes[MX_NAMES] = Object.fromEntries(lookup.routes.map((r) => [r.ip, r.host]));
            const mxs: HarakaMx[] = lookup.routes.map((r) => ({ exchange: r.ip, port, priority: r.priority, from_dns: r.host, bind_helo: helo }));
            return next(constants.ok, mxs);
          }
          const failure: MxFailure = { reason: lookup.reason, enhancedCode: lookup.kind === 'permanent' ? lookup.enhancedCode : '' };
          hmail.notes[MX_FAILURE] = failure;
          log.info({ domain, emailId: hmail.todo.notes.email_id, ...failure }, 'no route');
          next(lookup.kind === 'permanent' ? constants.deny : constants.denysoft, lookup.reason);
        },
        (err) => {
          hmail.notes[MX_FAILURE] = { reason: `MX lookup for ${domain} failed: ${String(err)}`, enhancedCode: '' } satisfies MxFailure;
          next(constants.denysoft, String(err));
        },
      );
  };
}
