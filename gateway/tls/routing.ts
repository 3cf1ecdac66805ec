// The gateway's one TLS routing (get_mx, gateway/hooks/mx.ts) and the Haraka wrappers (enforce.ts),
// built once per process from the config: the trusted roots, the providers that require TLS, and the
// MTA-STS policies (kept in the gateway's data dir).
import tls from 'node:tls';
import type { HMailItem } from '../haraka.js';
import type { MxLookup } from '../mx.js';
import { makeResolver } from '../../core/dns.js';
import { gatewayContext, gatewayRuntime } from '../runtime.js';
import { installTlsEnforcement, type OutboundTls, type TlsProto } from './enforce.js';
import { applyTlsRoute, decideTlsRoute } from './route.js';
import { StsPolicies } from './sts-policies.js';
import { STS_TESTING, TLS_FAILURE, TLS_REQUIRED, TLS_STATE } from './tls-info.js';

export interface TlsRouting {
  /** The MX lookup of a queue item's attempt, narrowed by MTA-STS, with its TLS requirement noted. */
  route(hmail: HMailItem, domain: string, lookup: MxLookup): Promise<MxLookup>;
  policies: StsPolicies;
}

/** The system's roots plus the operator's (tls.caFile); undefined when the operator adds none (node's roots apply). */
export function trustedRoots(extra: readonly string[]): string[] | undefined {
  return extra.length ? [...tls.rootCertificates, ...extra] : undefined;
}

let shared: TlsRouting | undefined;

export function tlsRouting(): TlsRouting {
  if (shared) return shared;
  const { config, paths, log } = gatewayContext();
  const settings = config.tls;
  const policies = new StsPolicies({
    resolver: makeResolver(config.dnsServers),
    settings: settings.mtaSts,
    ca: trustedRoots(settings.extraCa),
    file: paths.stsFile,
    log,
    onFetch: (ok) => void gatewayRuntime().then((rt) => rt.metrics.stsFetched(ok)),
  });
  const requireProviders = new Set(settings.requireProviders);
  shared = {
    policies,
    async route(hmail, domain, lookup) {
      for (const k of [TLS_REQUIRED, TLS_STATE, TLS_FAILURE, STS_TESTING]) delete hmail.notes[k];
      if (lookup.kind !== 'routes') return lookup;
      const policy = await policies.policyFor(domain).catch((err: unknown) => {
        log.warn({ err, domain }, 'MTA-STS lookup failed; delivering as without a policy');
        return undefined;
      });
      const decision = decideTlsRoute({ domain, requireTls: hmail.todo.notes.require_tls === true, routes: lookup.routes }, requireProviders, policy);
      return applyTlsRoute(hmail, lookup, decision);
    },
  };
  return shared;
}

/** Wraps Haraka's outbound for enforced TLS (postgate_mx's init_master). */
export function installTls(proto: TlsProto, obtls: OutboundTls): void {
  installTlsEnforcement(proto, obtls, trustedRoots(gatewayContext().config.tls.extraCa));
}
