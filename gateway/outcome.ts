// Turns Haraka's outbound hook arguments into delivery events, one per recipient.
// Pure functions over the fields Haraka sets (see gateway/haraka.ts).
import type { NewDeliveryEvent } from './outbox/outbox.js';
import type { BounceError, DeferredParams, DeliveredParams, HarakaAddress, HMailItem } from './haraka.js';
import { tlsFailureOf, tlsInfoOf } from './tls/tls-info.js';

/** hmail.notes keys postgate_mx sets at each attempt: IP → MX host name, and why no route was found. */
export const MX_NAMES = 'postgate_mx_names';
export const MX_FAILURE = 'postgate_mx_failure';
/** hmail.notes key postgate_pacing sets: the receiving provider of the queue item's domain. */
export const PROVIDER = 'postgate_provider';

export interface MxFailure {
  reason: string;
  /** Set for permanent failures (e.g. 5.1.2 NXDOMAIN, 5.1.10 null MX). */
  enhancedCode: string;
}

/** Delay in seconds before retry n (1-based); the last value repeats. */
export function retryDelay(delays: readonly number[], failures: number): number {
  if (!delays.length) return 60;
  return delays[Math.min(Math.max(failures, 1), delays.length) - 1]!;
}

/** A recipient's own refusal ("550 5.1.1 text"), as the remote answered its RCPT TO. */
function responseOf(rcpt: HarakaAddress, fallback: string): string {
  if (rcpt.reason) return rcpt.reason;
  if (rcpt.dsn_smtp_code) return [rcpt.dsn_smtp_code, rcpt.dsn_smtp_extc, rcpt.dsn_smtp_response].filter(Boolean).join(' ');
  return fallback;
}

const enhancedIn = (text: string) => /\b([245]\.\d{1,3}\.\d{1,3})\b/.exec(text)?.[1];

/** The first candidate of the right class: a deferral never reports a 5.x.x code, nor a failure a 4.x.x. */
function pickEnhanced(cls: '4' | '5', ...candidates: Array<string | undefined>): string {
  return candidates.find((c) => c?.startsWith(`${cls}.`)) ?? '';
}

/** Haraka prefixes whole-message refusals; the remote's reply is what users want to read. */
const remoteReply = (err: string) => err.replace(/^Upstream error: /, '');

const POLICY = /\b(spam|policy|blocked|block ?list|black ?list|reputation|abuse|dnsbl|rbl|content rejected)\b/i;

/** A permanent failure is 'rejected' when it is about policy (5.7.x, spam, block lists), else 'bounced'. */
export function classifyPermanent(enhanced: string, response: string): 'bounced' | 'rejected' {
  if (enhanced.startsWith('5.7.')) return 'rejected';
  if (/^5\.[12]\./.test(enhanced)) return 'bounced';
  return POLICY.test(response) ? 'rejected' : 'bounced';
}

function mxName(hmail: HMailItem, hostOrIp: string | undefined): string {
  if (!hostOrIp) return '';
  const names = hmail.notes[MX_NAMES] as Record<string, string> | undefined;
  return names?.[hostOrIp] ?? hostOrIp;
}

const mxFailure = (hmail: HMailItem) => hmail.notes[MX_FAILURE] as MxFailure | undefined;

/** Failures so far, counting those of the queue items a scheduled retry continues. */
export const failuresOf = (hmail: HMailItem) => (Number(hmail.todo.notes.attempt_base) || 0) + hmail.num_failures;

/** The attempt a hook reports on: Haraka counts failures, we count attempts. */
export const attemptOf = (hmail: HMailItem) => failuresOf(hmail) + 1;

function base(hmail: HMailItem, now: number) {
  return { emailId: String(hmail.todo.notes.email_id ?? ''), atMs: now, provider: String(hmail.notes[PROVIDER] ?? '') };
}

export function sendingEvents(hmail: HMailItem, now: number): NewDeliveryEvent[] {
  return hmail.todo.rcpt_to.map((r) => ({
    ...base(hmail, now),
    type: 'sending',
    recipient: r.address,
    mx: '',
    response: '',
    attempt: attemptOf(hmail),
    enhancedCode: '',
    nextAttemptMs: 0,
  }));
}

/** The attempt's TLS (gateway/tls/tls-info.ts) as the outbox keeps it: JSON, '' when nothing is known (then the event has none). */
const tlsOf = (hmail: HMailItem): string => {
  const info = tlsInfoOf(hmail);
  return info ? JSON.stringify(info) : '';
};

export function sentEvents(hmail: HMailItem, params: DeliveredParams, now: number): NewDeliveryEvent[] {
  const [host, ip, response, , , , okRecips] = params;
  const mx = mxName(hmail, ip) || host;
  const tls = tlsOf(hmail);
  return okRecips.map((r) => ({
    ...base(hmail, now),
    type: 'sent',
    recipient: r.address,
    mx,
    response,
    attempt: attemptOf(hmail),
    enhancedCode: '',
    nextAttemptMs: 0,
    ...(tls ? { tls } : {}),
  }));
}

/**
 * The recipients that failed temporarily: those the remote named (fail_recips),
 * else every recipient of this queue item. Haraka has already counted this failure.
 */
export function deferredEvents(hmail: HMailItem, params: DeferredParams, delaySec: number, now: number): NewDeliveryEvent[] {
  const named = params.fail_recips?.length ? params.fail_recips : undefined;
  // TLS was required and the MX could not give it (no STARTTLS, a certificate that does not verify): the receiver's doing.
  const tlsFailure = named ? undefined : tlsFailureOf(hmail);
  const remoteAnswered = !!named || !!tlsFailure || /^Upstream error: /.test(params.err);
  const tls = tlsOf(hmail);
  return (named ?? hmail.todo.rcpt_to).map((r) => {
    const response = named ? responseOf(r, params.err) : (tlsFailure?.reason ?? mxFailure(hmail)?.reason ?? remoteReply(params.err));
    return {
      ...base(hmail, now),
      type: 'deferred',
      recipient: r.address,
      mx: tlsFailure?.mx ?? (remoteAnswered ? mxName(hmail, params.mx?.from_dns ?? params.mx?.exchange ?? r.dsn_remote_mta) : ''),
      response,
      attempt: failuresOf(hmail),
      enhancedCode: tlsFailure?.enhancedCode ?? pickEnhanced('4', named ? r.dsn_smtp_extc : undefined, enhancedIn(response)),
      nextAttemptMs: now + delaySec * 1000,
      // The remote's 4xx, or no answer at all (DNS, connection): never our own pacing.
      cause: remoteAnswered ? 'receiver' : 'network',
      ...(tls ? { tls } : {}),
    };
  });
}

/**
 * Permanent failures: the recipients the remote refused (bounced_rcpt), else every
 * recipient of this queue item: no route (postgate_mx's reason), MAIL or DATA refused,
 * or retries ran out ("Too many failures"). A 4xx that persists that long is a refusal
 * by the receiver, not a missing mailbox: `rejected`, with the receiver's last answer.
 */
export function bounceEvents(hmail: HMailItem, err: BounceError, now: number): NewDeliveryEvent[] {
  const named = err.bounced_rcpt?.length ? err.bounced_rcpt : undefined;
  const gaveUp = !named && /^Too many failures/.test(err.message);
  const noRoute = named ? undefined : mxFailure(hmail);
  return (named ?? hmail.todo.rcpt_to).map((r) => {
    let response: string;
    let enhancedCode: string;
    if (named) {
      response = responseOf(r, err.message);
      enhancedCode = pickEnhanced('5', r.dsn_smtp_extc, enhancedIn(response));
    } else if (gaveUp) {
      // Haraka wraps the last temporary failure; its dsn_status was rewritten 4.x.x → 5.x.x.
      // A recipient the remote answered (RCPT 4xx) carries its reply; else the message-level one.
      response =
        noRoute?.reason ??
        tlsFailureOf(hmail)?.reason ??
        (r.reason || r.dsn_smtp_code ? responseOf(r, '') : remoteReply(err.message.replace(/^Too many failures \((.*)\)$/s, '$1')));
      enhancedCode = pickEnhanced('4', r.dsn_smtp_extc, enhancedIn(response)) || '5.4.7';
    } else if (noRoute) {
      response = noRoute.reason;
      enhancedCode = noRoute.enhancedCode;
    } else {
      response = remoteReply(err.message);
      enhancedCode = pickEnhanced('5', enhancedIn(response), r.dsn_status);
    }
    return {
      ...base(hmail, now),
      type: gaveUp ? 'rejected' : classifyPermanent(enhancedCode, response),
      recipient: r.address,
      mx: noRoute ? '' : mxName(hmail, err.mx?.from_dns ?? err.mx?.exchange ?? r.dsn_remote_mta),
      response,
      // Giving up happens after the failure was counted: that attempt is num_failures.
      attempt: gaveUp ? failuresOf(hmail) : attemptOf(hmail),
      enhancedCode,
      nextAttemptMs: 0,
      cause: noRoute ? 'network' : 'receiver',
      ...(tlsOf(hmail) ? { tls: tlsOf(hmail) } : {}),
    };
  });
}
