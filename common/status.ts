// Email and recipient statuses: how a delivery event moves a recipient, and what
// the email's own status is given its recipients'. Pure; every store applies these.

/**
 * Every status an email or a recipient can have (GET /v1/emails/:id, analytics, webhooks).
 * The spec's eight, then two of ours: `scheduled` (waiting for scheduled_at) and
 * `canceled` (a scheduled email canceled before it left, or mail an operator canceled).
 */
export const EMAIL_STATUSES = ['queued', 'sending', 'sent', 'delivered', 'bounced', 'rejected', 'complained', 'failed', 'scheduled', 'canceled'] as const;
export type EmailStatus = (typeof EMAIL_STATUSES)[number];
/** A recipient's status: an email's but `scheduled` (a scheduled email's recipients wait as `queued`). */
export type RecipientStatus = Exclude<EmailStatus, 'scheduled'>;
/**
 * What a webhook can subscribe to: every status, `deferred` (an attempt that will be retried), and the
 * recipients' `opened` and `clicked` (open and click tracking, control/tracking).
 */
export const EVENT_KINDS = [...EMAIL_STATUSES, 'deferred', 'opened', 'clicked'] as const;
/** Open and click tracking's event kinds: they change no status. */
export type TrackingEventType = 'opened' | 'clicked';
export type EventKind = (typeof EVENT_KINDS)[number];
/** What a gateway reports of a delivery (proto/events.ts names the wire's enum so). */
export type DeliveryEventType = 'sending' | 'sent' | 'deferred' | 'bounced' | 'rejected' | 'delivered' | 'complained' | 'unsubscribed';
/** What an email's event log holds: the statuses it reached, the gateways' events, and control's own. */
export type EmailEventType = EmailStatus | DeliveryEventType | 'rescheduled' | TrackingEventType;

/**
 * Recipient status order: an event never moves a recipient backwards, except that a
 * refused (rejected) recipient may be tried again.
 */
export const recipientRank: Readonly<Record<RecipientStatus, number>> = {
  queued: 0,
  sending: 1,
  rejected: 2,
  bounced: 3,
  sent: 3,
  delivered: 4,
  complained: 5,
  failed: 6,
  canceled: 6,
};

const canceledYetAnswered = new Set<string>(['sent', 'delivered', 'bounced']);
const terminal = new Set<string>(EMAIL_STATUSES.filter((x) => x !== 'queued' && x !== 'sending' && x !== 'scheduled'));
const isRecipientStatus = (s: string): s is RecipientStatus => Object.hasOwn(recipientRank, s);

/** The recipient's status after an event, or null when the event changes nothing. */
export function recipientStatusAfter(current: RecipientStatus, event: EmailEventType): RecipientStatus | null {
  const next = event === 'deferred' ? 'sending' : event;
  if (!isRecipientStatus(next)) return null;
  if (current === 'rejected' && next === 'sending') return next;
  // A copy already on the wire when the operator canceled it: what the receiver answered is the truth.
  if (current === 'canceled' && canceledYetAnswered.has(next)) return next;
  if (next === 'bounced' && current === 'sent') return next; // an asynchronous bounce after acceptance
  return recipientRank[next] > recipientRank[current] ? next : null;
}

/** The email's status from its recipients' (documented in the README). */
export function emailStatusOf(statuses: readonly RecipientStatus[]): EmailStatus {
  if (statuses.includes('complained')) return 'complained';
  if (statuses.length && statuses.every((s) => terminal.has(s))) {
    if (statuses.every((s) => s === 'delivered')) return 'delivered';
    if (statuses.some((s) => s === 'sent' || s === 'delivered')) return 'sent';
    // Canceled before it was delivered anywhere: the operator's order ended it, not a delivery failure.
    if (statuses.some((s) => s === 'canceled')) return 'canceled';
    if (statuses.some((s) => s === 'rejected')) return 'rejected';
    if (statuses.some((s) => s === 'bounced')) return 'bounced';
    return 'failed';
  }
  return statuses.some((s) => s !== 'queued') ? 'sending' : 'queued';
}
