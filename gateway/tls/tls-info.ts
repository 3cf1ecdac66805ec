// What one delivery attempt's TLS was, kept in the queue item's in-memory notes (hmail.notes) by
// gateway/tls/enforce.ts and route.ts, and read by gateway/outcome.ts into the attempt's events.
import type { HMailItem } from '../haraka.js';

/** What required verified TLS of this attempt: the sender domain, the receiving provider, or the recipient domain's MTA-STS policy. */
export type TlsPolicy = 'domain' | 'provider' | 'mta-sts';

/** hmail.notes keys. */
export const TLS_REQUIRED = 'postgate_tls_required';
/** The connection of the current attempt: { used, version, verified }. */
export const TLS_STATE = 'postgate_tls_state';
/** Why an attempt that required TLS was not made: { reason, enhancedCode }. */
export const TLS_FAILURE = 'postgate_tls_failure';
/** Set when the recipient domain's MTA-STS policy is in testing mode: what enforce would have refused so far ('' = nothing). */
export const STS_TESTING = 'postgate_sts_testing';

export interface TlsInfo {
  used: boolean;
  /** TLSv1.3, TLSv1.2...; '' without TLS. */
  version: string;
  /** The certificate verified for the MX host name (against the system roots and tls.caFile). */
  verified: boolean;
  policy: TlsPolicy | '';
  /** E.g. what an MTA-STS policy in testing mode would have refused. */
  note: string;
}

export interface TlsFailure {
  reason: string;
  enhancedCode: string;
  /** The MX host name it happened with. */
  mx: string;
}

export type TlsState = Pick<TlsInfo, 'used' | 'version' | 'verified'>;

export const tlsFailureOf = (hmail: HMailItem) => hmail.notes[TLS_FAILURE] as TlsFailure | undefined;

/**
 * The attempt's TLS for its events: known once a connection was made, or whenever TLS was required
 * (an attempt refused before any connection still says what required it); undefined otherwise.
 */
export function tlsInfoOf(hmail: HMailItem): TlsInfo | undefined {
  const state = hmail.notes[TLS_STATE] as TlsState | undefined;
  const policy = (hmail.notes[TLS_REQUIRED] as TlsPolicy | undefined) ?? '';
  if (!state && !policy) return undefined;
  const s = state ?? { used: false, version: '', verified: false };
  const testing = hmail.notes[STS_TESTING] as string | undefined;
  let note = testing ?? '';
  // Testing mode: the policy would have refused a connection without TLS or with a certificate that does not verify.
  if (testing !== undefined && state && !(state.used && state.verified))
    note ||= `MTA-STS policy in testing mode: enforce would have refused ${state.used ? 'a certificate that does not verify' : 'delivery without TLS'}`;
  return { used: s.used, version: s.version, verified: s.verified, policy, note };
}

/** An outbox row's tls column back (gateway/grpc-server.ts); undefined for '' or what does not read as one. */
export function tlsFromJson(json: string): TlsInfo | undefined {
  if (!json) return undefined;
  try {
    const t = JSON.parse(json) as Partial<TlsInfo>;
    return {
      used: t.used === true,
      version: String(t.version ?? ''),
      verified: t.verified === true,
      policy: (['domain', 'provider', 'mta-sts'].includes(String(t.policy)) ? t.policy : '') as TlsInfo['policy'],
      note: String(t.note ?? ''),
    };
  } catch {
    return undefined;
  }
}
