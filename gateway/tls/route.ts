// At get_mx: whether this attempt requires verified TLS, and which MX hosts it may use. TLS is required
// by the sender domain (`tls: "enforced"`, OutboundMessage.require_tls), by the receiving provider
// (tls.requireProviders), or by the recipient domain's MTA-STS policy in enforce mode, which also limits
// the MX hosts to those its mx patterns match (none left: deferred). A policy in testing mode changes
// nothing but is noted in the events. The decision goes to hmail.notes (tls-info.ts) for enforce.ts.
import type { MxLookup, MxRoute } from '../mx.js';
import type { HMailItem } from '../haraka.js';
import { classify } from '../../common/providers.js';
import { policyAllows, type StsPolicy } from './mta-sts.js';
import { STS_TESTING, TLS_REQUIRED, TLS_STATE, type TlsPolicy } from './tls-info.js';

export interface TlsRouteInput {
  domain: string;
  /** The sender domain's `tls: "enforced"`. */
  requireTls: boolean;
  routes: MxRoute[];
}

export type TlsRoute =
  | { kind: 'routes'; routes: MxRoute[]; required: TlsPolicy | ''; testing?: string }
  | { kind: 'temporary'; reason: string; required: TlsPolicy };

const hostsOf = (routes: readonly MxRoute[]) => [...new Set(routes.map((r) => r.host))];
/** Names as an event's response lists them: a few, then how many more (a policy may list thousands). */
export function listed(names: readonly string[], most = 5): string {
  return names.length <= most ? names.join(', ') : `${names.slice(0, most).join(', ')} and ${names.length - most} more`;
}

/** The pure decision, given the domain's MTA-STS policy (undefined: none). */
export function decideTlsRoute(input: TlsRouteInput, requireProviders: ReadonlySet<string>, policy: StsPolicy | undefined): TlsRoute {
  const { domain, routes } = input;
  const provider = requireProviders.size ? classify(domain, hostsOf(routes)) : '';
  const enforce = policy?.mode === 'enforce';
  const required: TlsPolicy | '' = input.requireTls ? 'domain' : requireProviders.has(provider) ? 'provider' : enforce ? 'mta-sts' : '';
  if (!policy || policy.mode === 'none') return { kind: 'routes', routes, required };
  const allowed = routes.filter((r) => policyAllows(policy, r.host));
  if (enforce) {
    if (allowed.length) return { kind: 'routes', routes: allowed, required };
    return {
      kind: 'temporary',
      required: required || 'mta-sts',
      reason: `MTA-STS policy of ${domain} (enforce) allows none of its MX hosts: ${listed(hostsOf(routes))} (the policy names ${listed(policy.mx)})`,
    };
  }
  const refused = hostsOf(routes).filter((h) => !allowed.some((r) => r.host === h));
  const testing = refused.length ? `MTA-STS policy of ${domain} in testing mode: enforce would have refused MX ${listed(refused)} (not in its mx list)` : '';
  return { kind: 'routes', routes, required, testing };
}

/** Applies the decision to a queue item's notes and its MX lookup. */
export function applyTlsRoute(hmail: HMailItem, lookup: Extract<MxLookup, { kind: 'routes' }>, route: TlsRoute): MxLookup {
  delete hmail.notes[TLS_STATE];
  delete hmail.notes[STS_TESTING];
  if (route.required) hmail.notes[TLS_REQUIRED] = route.required;
  else delete hmail.notes[TLS_REQUIRED];
  if (route.kind === 'temporary') return { kind: 'temporary', reason: route.reason };
  if (route.testing !== undefined) hmail.notes[STS_TESTING] = route.testing;
  return { ...lookup, routes: route.routes };
}
