// What a webhook message says (Standard Webhooks envelope {type, timestamp, data}, plus
// Resend's top-level `created_at`: the same instant), and which endpoints want it. Pure:
// the store queues the result in the same transaction as the change.
import type { EmailStatus } from '../../common/status.js';
import type { AuthEventType } from '../store/index.js';

/** The email as its webhook messages describe it. */
export interface PayloadEmail {
  id: string;
  from: string;
  to: string[];
  subject: string;
  tags: string[];
  createdAt: number;
}

/** What an endpoint's filter is judged on. */
export interface Subscriber {
  statuses: readonly string[];
  enabled: boolean;
}

/**
 * Email events: an endpoint with an empty filter wants every one (but no auth event: receivers
 * registered before auth events existed never get them unasked); otherwise the event's type or
 * the email's new status must be listed.
 */
export const wantsEvent = (w: Subscriber, status: EmailStatus, event: Record<string, unknown>): boolean =>
  w.enabled && (!w.statuses.length || w.statuses.includes(String(event.type)) || w.statuses.includes(status));

/** Auth events (user.created, …): only endpoints that list the type. */
export const wantsAuthEvent = (w: Subscriber, type: AuthEventType): boolean => w.enabled && w.statuses.includes(type);

const envelope = (type: string, at: number, data: Record<string, unknown>): string => {
  const when = new Date(at).toISOString();
  return JSON.stringify({ type, timestamp: when, created_at: when, data });
};

/** The message body for an email that reached `status` at `at` through `event` (its `at` in ms). */
export function webhookPayload(email: PayloadEmail, status: EmailStatus, at: number, event: Record<string, unknown>): string {
  const data = {
    email_id: email.id,
    status,
    from: email.from,
    to: email.to,
    subject: email.subject,
    tags: email.tags,
    created_at: new Date(email.createdAt).toISOString(),
    event: { ...event, at: new Date(Number(event.at)).toISOString() },
  };
  // An open or a click is its own event, whatever the status (Resend's email.opened and email.clicked, with its `click`).
  if (event.type === 'opened' || event.type === 'clicked') return envelope(`email.${event.type}`, at, { ...data, ...tracked(event) });
  return envelope(`email.${event.type === 'deferred' ? 'deferred' : status}`, at, data);
}

/** Resend's `click: {ipAddress, link, timestamp, userAgent}` (and the same `open` for an open), with whether a machine did it. */
function tracked(event: Record<string, unknown>): Record<string, unknown> {
  const what = {
    ...(event.type === 'clicked' ? { link: event.link } : {}),
    timestamp: new Date(Number(event.at)).toISOString(),
    userAgent: event.user_agent,
    ipAddress: event.ip,
    bot: event.bot === true,
    ...(event.bot_reason ? { botReason: event.bot_reason } : {}),
  };
  return event.type === 'clicked' ? { click: what } : { open: what };
}

/** The message body for mail received for a receiving domain (control/inbound/parse.ts builds `data`). */
export const receivedPayload = (at: number, data: Record<string, unknown>): string => envelope('email.received', at, data);

/** The message body for an auth event (auth/events.ts builds `data`, without secrets). */
export const authEventPayload = (type: AuthEventType, at: number, data: Record<string, unknown>): string => envelope(type, at, data);
