// Webhook event names as Resend's API and SDK write them (`events: ['email.sent', …]`), to and
// from an endpoint's filter in our own vocabulary (`statuses`: email statuses and event kinds
// of common/status.ts, and auth event types). Pure.
import { EVENT_KINDS } from '../../common/status.js';
import { AUTH_EVENT_TYPES } from '../store/index.js';

/** Resend's name for the `deferred` event kind (our own messages say `email.deferred`). */
const DELAYED = 'email.delivery_delayed';

/**
 * Resend event names postgate accepts in a filter but never sends (contacts, topics or inboxes), so a filter written for Resend is not refused; a name that is also one of our kinds is
 * sent after all.
 */
const NEVER_SENT: readonly string[] = [
  'email.scheduled',
  'email.suppressed',
  'contact.created',
  'contact.updated',
  'contact.deleted',
  'contact.topics.updated',
  'domain.created',
  'domain.updated',
  'domain.deleted',
  'suppression.added',
  'suppression.removed',
  'topic.created',
  'topic.updated',
  'topic.deleted',
  'inbox.created',
  'inbox.updated',
  'inbox.deleted',
  'inbox.thread.created',
  'inbox.thread.folder.updated',
  'inbox.thread.assigned',
  'inbox.thread.unassigned',
  'inbox.thread.labels.updated',
  'inbox.email.received',
  'inbox.email.sent',
  'inbox.draft.created',
  'inbox.draft.updated',
  'inbox.draft.sent',
  'inbox.draft.deleted',
];

/**
 * Resend event names postgate sends that are not an email's event kind: mail received for a receiving
 * domain (control/inbound). Like auth events, only endpoints that list one get it.
 */
export const RECEIVED_EVENT = 'email.received';
const OTHER_SENT: readonly string[] = [RECEIVED_EVENT];

/** What `statuses` may list: every email event kind and every auth event type. */
export const FILTER_TOKENS: readonly string[] = [...EVENT_KINDS, ...AUTH_EVENT_TYPES];

const kinds = new Set<string>(EVENT_KINDS);
const fromEvent = new Map<string, string>([
  ...EVENT_KINDS.map((k) => [`email.${k}`, k] as [string, string]),
  [DELAYED, 'deferred'],
  ...AUTH_EVENT_TYPES.map((t) => [t, t] as [string, string]),
  ...OTHER_SENT.map((n) => [n, n] as [string, string]),
  // A Resend name that is also one of our kinds (email.scheduled) maps to the kind above, not here.
  ...NEVER_SENT.filter((n) => !kinds.has(n.slice('email.'.length))).map((n) => [n, n] as [string, string]),
]);

/** Every name `events` accepts. */
export const EVENT_NAMES: readonly string[] = [...fromEvent.keys()];

/** The filter for Resend-style event names, or the first name it does not know (the caller words the error). */
export function filterOfEvents(events: readonly string[]): { filter: string[] } | { unknown: string } {
  const filter: string[] = [];
  for (const e of events) {
    const token = fromEvent.get(e);
    if (token === undefined) return { unknown: e };
    if (!filter.includes(token)) filter.push(token);
  }
  return { filter };
}

/** The filter in Resend's names; an empty filter (every email event) lists every email event postgate sends. */
export function eventsOfFilter(filter: readonly string[]): string[] {
  const tokens = filter.length ? filter : EVENT_KINDS;
  return tokens.map((t) => (t === 'deferred' ? DELAYED : kinds.has(t) ? `email.${t}` : t));
}
