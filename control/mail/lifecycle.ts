// The email lifecycle: what each intent changes, decided once for every store backend.
// Each function takes the state a backend loaded inside the intent's one transaction
// and the input, and returns the outcome with a typed set of changes (rows, events,
// suppressions and their scope, counts, webhook messages); the backend only writes
// them, in the same transaction. Pure: no I/O and nothing of the store. The verdicts
// it applies are the shared ones (rules.ts, common/status.ts, webhooks/payload.ts).
import { createHash } from 'node:crypto';
import { DAY_MS, dayOf } from '../../core/clock.js';
import { prefixedId } from '../../core/ids.js';
import { emailStatusOf, recipientStatusAfter } from '../../common/status.js';
import { type Subscriber, wantsEvent, webhookPayload } from '../webhooks/payload.js';
import { judgeBulk, judgeQuota, judgeSuppressions, refusalText, subjectHash } from './rules.js';
import {
  type Acceptance,
  type AcceptGuards,
  type AppliedEvent,
  type EmailEventType,
  type EmailStatus,
  type GatewayEvent,
  type NewEmail,
  type RecipientKind,
  type RecipientStatus,
  type Refusal,
  readRequest,
  type ScheduleChange,
  type SuppressionScope,
  type TrackingCount,
  type TrackingHit,
} from './vocabulary.js';

// What a backend loads

/** An email as an intent finds it in the store. */
export interface LoadedEmail {
  id: string;
  projectId: string;
  status: EmailStatus;
  bulk: boolean;
  /** The statuses it has reached, comma-separated as stored: each is counted once. */
  reached: string;
  from: string;
  subject: string;
  createdAt: number;
  /** The StoredRequest JSON when the intent read it (release, cancel); else read only for a webhook message. */
  request?: string;
  /** In recipient order (what tokens name by position). */
  recipients: Array<{ address: string; kind: RecipientKind; status: RecipientStatus }>;
}

/** A webhook endpoint as the lifecycle judges it (WebhookRow is one). */
export type Endpoint = Subscriber & { id: string };

/** What the quota and bulk rules read for an email on its day (see Screened); absent when not asked. */
export interface LoadedCounts {
  /** Emails counted today and this month. */
  usage?: { day: number; month: number };
  /** Bulk recipients today with this subject and in all, in the previous `days` days together, and today's allowance. */
  bulk?: { sameSubjectToday: number; today: number; previousDays: number; allowance: number };
}

// What a backend writes

export interface EmailInsert {
  id: string;
  projectId: string;
  status: NewEmail['status'];
  from: string;
  subject: string;
  bulk: boolean;
  request: string;
  error: string | null;
  errorCode: string | null;
  createdAt: number;
  reached: string;
  system: boolean;
  /** Why control keeps it from the gateways (a bulk volume spike); null when it does not. */
  held: string | null;
  scheduledAt: number | null;
  /** Each address once, at its position (the n-th recorded recipient is position n). */
  recipients: Array<{ address: string; kind: RecipientKind; status: RecipientStatus; position: number }>;
  /** The bytes to keep, in order: none for a failed email, which is never sent. */
  attachments: readonly Buffer[];
}

/** An email row's new values: the columns named change, the others stay. */
export interface EmailUpdate {
  id: string;
  updatedAt: number;
  status?: EmailStatus;
  reached?: string;
  error?: string | null;
  errorCode?: string | null;
  held?: string | null;
  scheduledAt?: number;
}

export interface RecipientUpdate {
  emailId: string;
  address: string;
  status: RecipientStatus;
  at: number;
}

/** An entry of an email's event log; one with the key (email, type, recipient, attempt, dedupe) of a recorded one is not recorded again. */
export interface EventInsert {
  emailId: string;
  type: EmailEventType;
  recipient: string;
  attempt: number;
  at: number;
  details: Record<string, unknown> | null;
  dedupe: string;
}

/**
 * An address the project's mail (scope 'all') or bulk mail ('bulk') no longer goes to. Written so:
 * an 'all' replaces a stored 'bulk' (a bounce outweighs an unsubscribe); otherwise a stored row stays.
 */
export interface SuppressionInsert {
  projectId: string;
  address: string;
  reason: 'bounced' | 'complained' | 'unsubscribed';
  scope: SuppressionScope;
  emailId: string;
  at: number;
}

/** A change some webhook endpoints want: one message each, once the email's request is at hand (webhookMessages). */
export interface WebhookNotice {
  webhookIds: string[];
  email: { id: string; projectId: string; from: string; subject: string; createdAt: number; request?: string };
  status: EmailStatus;
  at: number;
  event: Record<string, unknown>;
}

/** A message queued for an endpoint (webhook_deliveries, pending, first attempt at `at`). */
export interface WebhookMessage {
  id: string;
  webhookId: string;
  projectId: string;
  payload: string;
  at: number;
}

export interface Changes {
  inserts: EmailInsert[];
  emails: EmailUpdate[];
  recipients: RecipientUpdate[];
  events: EventInsert[];
  suppressions: SuppressionInsert[];
  /** An email reached a status (or was first opened or clicked by a person) on a UTC day (daily analytics): +1 each. */
  statuses: Array<{ projectId: string; day: string; status: EmailStatus | 'opened' | 'clicked' }>;
  /** An email counted against the project's quotas on a day (and its month): +1 each. */
  usage: Array<{ projectId: string; day: string }>;
  /** Bulk recipients accepted on a day, in all and with one subject. */
  bulk: Array<{ projectId: string; day: string; subjectHash: string; recipients: number }>;
  webhooks: WebhookNotice[];
  /** Opens and clicks to add to an email's counts per kind and link (email_tracking). */
  tracking: TrackingCount[];
}

export interface Decision<T> {
  outcome: T;
  changes: Changes;
}

export const noChanges = (): Changes => ({
  inserts: [],
  emails: [],
  recipients: [],
  events: [],
  suppressions: [],
  statuses: [],
  usage: [],
  bulk: [],
  webhooks: [],
  tracking: [],
});

/** Appends `from` to `into` (several intents written together). */
export function addChanges(into: Changes, from: Changes): void {
  for (const k of Object.keys(into) as Array<keyof Changes>) (into[k] as unknown[]).push(...from[k]);
}

const event = (emailId: string, type: EmailEventType, at: number, details: Record<string, unknown> | null = null, dedupe = ''): EventInsert => ({
  emailId,
  type,
  recipient: '',
  attempt: 0,
  at,
  details,
  dedupe,
});

type NoticeEmail = WebhookNotice['email'];

/** Queues the change for the endpoints that want it. */
function notify(c: Changes, hooks: readonly Endpoint[], email: NoticeEmail, status: EmailStatus, at: number, ev: Record<string, unknown>): void {
  const webhookIds: string[] = [];
  for (const w of hooks) if (wantsEvent(w, status, ev)) webhookIds.push(w.id);
  if (webhookIds.length) c.webhooks.push({ webhookIds, email, status, at, event: ev });
}

/** The email reached `status`: counted unless it had reached it before, and queued for the endpoints. Returns `reached` after. */
function reach(
  c: Changes,
  hooks: readonly Endpoint[],
  email: NoticeEmail,
  reached: string,
  status: EmailStatus,
  at: number,
  ev: Record<string, unknown>,
): string {
  const list = reached ? reached.split(',') : [];
  if (!list.includes(status)) {
    list.push(status);
    c.statuses.push({ projectId: email.projectId, day: dayOf(at), status });
  }
  notify(c, hooks, email, status, at, ev);
  return list.join(',');
}

const noticeOf = (e: LoadedEmail): NoticeEmail => ({
  id: e.id,
  projectId: e.projectId,
  from: e.from,
  subject: e.subject,
  createdAt: e.createdAt,
  ...(e.request !== undefined ? { request: e.request } : {}),
});

// Accept and release: the quota and bulk rules

/** An email on its way in as the suppression list leaves it, with the counters its rules read (LoadedCounts). */
export interface Screened {
  email: NewEmail;
  guards: AcceptGuards;
  /** Every recipient is suppressed: the email is recorded as failed. */
  suppressed: boolean;
  /** The UTC day it leaves on: the day its counts are of. */
  day: string;
  /** Usage is read (the quota is judged). */
  quota: boolean;
  /** Bulk counts are read for this subject and the previous `days` days (from `since`); `recipients` it adds. */
  bulk?: { subjectHash: string; since: string; days: number; recipients: number };
}

/** The addresses whose suppression scope accept reads (none unless the guards ask). */
export function suppressionLookups(e: NewEmail, guards: AcceptGuards): string[] {
  if (!guards.suppressions || e.status === 'failed') return [];
  return e.recipients.filter((r) => r.status !== 'failed').map((r) => r.address);
}

/** The email as the project's suppression list leaves it (`scopes`: of the suppressionLookups addresses suppressed). */
export function screen(e: NewEmail, guards: AcceptGuards, scopes: ReadonlyMap<string, SuppressionScope> = new Map()): Screened {
  const { email, suppressed } = guards.suppressions ? judgeSuppressions(e, (address) => scopes.get(address)) : { email: e, suppressed: false };
  const day = dayOf(email.createdAt);
  // Only mail that leaves now is judged: a scheduled email is judged at release, a failed one never.
  const queued = email.status === 'queued';
  const quota = !!guards.quota && queued;
  if (!(guards.bulk && email.bulk && queued)) return { email, guards, suppressed, day, quota };
  const days = guards.bulk.spike.days;
  const bulk = {
    subjectHash: subjectHash(email.subject),
    since: dayOf(email.createdAt - days * DAY_MS),
    days,
    recipients: email.recipients.filter((r) => r.status !== 'failed').length,
  };
  return { email, guards, suppressed, day, quota, bulk };
}

/** The quota and bulk rules against the counts; when they pass, the counts the email adds go into `c`. */
function admit(s: Screened, counts: LoadedCounts, c: Changes): Refusal | { held?: string } {
  const { email: e, guards } = s;
  if (s.quota) {
    const refusal = judgeQuota(counts.usage!, guards.quota!);
    if (refusal) return refusal;
  }
  let held: string | undefined;
  if (s.bulk) {
    const n = counts.bulk!;
    const verdict = judgeBulk(
      { recipients: s.bulk.recipients, sameSubjectToday: n.sameSubjectToday, today: n.today, average: n.previousDays / s.bulk.days, allowance: n.allowance },
      guards.bulk!,
    );
    if ('refusal' in verdict) return verdict.refusal;
    held = verdict.held;
    c.bulk.push({ projectId: e.projectId, day: s.day, subjectHash: s.bulk.subjectHash, recipients: s.bulk.recipients });
  }
  if (s.quota) c.usage.push({ projectId: e.projectId, day: s.day });
  return held ? { held } : {};
}

/** Held by control, not a gateway: the delay says so, and waits for an announcement or the operator. */
function hold(c: Changes, hooks: readonly Endpoint[], email: NoticeEmail, held: string, at: number): void {
  const details = { cause: 'volume', reason: held };
  c.events.push(event(email.id, 'deferred', at, details, 'volume'));
  notify(c, hooks, email, 'queued', at, { type: 'deferred', at, ...details });
}

/**
 * A new email: refused (nothing recorded), or recorded with its recipients, first events, counts and
 * webhook messages; a queued one may be held (a bulk volume spike).
 */
export function accept(s: Screened, counts: LoadedCounts, hooks: readonly Endpoint[]): Decision<Acceptance> {
  const c = noChanges();
  const admitted = admit(s, counts, c);
  if ('kind' in admitted) return { outcome: admitted, changes: c };
  const e = s.email;
  const held = admitted.held;
  const recipients: EmailInsert['recipients'] = [];
  const seen = new Set<string>();
  for (const r of e.recipients) {
    if (seen.has(r.address)) continue;
    seen.add(r.address);
    recipients.push({ address: r.address, kind: r.kind, status: r.status ?? (e.status === 'failed' ? 'failed' : 'queued'), position: recipients.length });
  }
  c.inserts.push({
    id: e.id,
    projectId: e.projectId,
    status: e.status,
    from: e.from,
    subject: e.subject,
    bulk: e.bulk,
    request: e.request,
    error: e.error ?? null,
    errorCode: e.errorCode ?? null,
    createdAt: e.createdAt,
    reached: e.status,
    system: e.system === true,
    held: held ?? null,
    scheduledAt: e.scheduledAt ?? null,
    recipients,
    attachments: e.status === 'failed' ? [] : (e.attachments ?? []),
  });
  c.events.push(event(e.id, e.status, e.createdAt, e.error ? { reason: e.error, code: e.errorCode } : null));
  // A partly refused email says which recipients were left out, and why.
  for (const r of e.recipients) {
    if (r.status === 'failed' && e.status !== 'failed')
      c.events.push({ ...event(e.id, 'failed', e.createdAt, { reason: r.reason ?? 'refused' }), recipient: r.address });
  }
  const email: NoticeEmail = { id: e.id, projectId: e.projectId, from: e.from, subject: e.subject, createdAt: e.createdAt, request: e.request };
  reach(c, hooks, email, '', e.status, e.createdAt, { type: e.status, at: e.createdAt, ...(e.error ? { reason: e.error, code: e.errorCode } : {}) });
  if (held) hold(c, hooks, email, held, e.createdAt);
  const outcome: Acceptance = s.suppressed ? { kind: 'suppressed' } : held ? { kind: 'accepted', held } : { kind: 'accepted' };
  return { outcome, changes: c };
}

/**
 * A due scheduled email as the queued email it becomes at `now` (the rules judge the day it leaves,
 * not the day it was accepted; a recipient refused at ingestion stays refused), or undefined when it
 * is no longer scheduled. The suppression list is not judged again.
 */
export function releasing(email: LoadedEmail | undefined, guards: AcceptGuards, now: number): Screened | undefined {
  if (email?.status !== 'scheduled') return undefined;
  const e: NewEmail = {
    id: email.id,
    projectId: email.projectId,
    status: 'queued',
    from: email.from,
    subject: email.subject,
    bulk: email.bulk,
    request: email.request!,
    createdAt: now,
    recipients: email.recipients.map((r) => ({ address: r.address, kind: r.kind, ...(r.status === 'failed' ? { status: 'failed' as const } : {}) })),
  };
  return screen(e, { ...guards, suppressions: false });
}

/** The email `releasing` screened leaves: queued (maybe held), or failed with the refusal's code. */
export function release(email: LoadedEmail, s: Screened, counts: LoadedCounts, hooks: readonly Endpoint[], now: number): Decision<Acceptance> {
  const c = noChanges();
  const admitted = admit(s, counts, c);
  const notice = noticeOf(email);
  if ('kind' in admitted) {
    const { code, message } = refusalText(admitted);
    const details = { reason: message, code };
    const reached = reach(c, hooks, notice, email.reached, 'failed', now, { type: 'failed', at: now, ...details });
    c.emails.push({ id: email.id, updatedAt: now, status: 'failed', reached, error: message, errorCode: code });
    for (const r of email.recipients) if (r.status === 'queued') c.recipients.push({ emailId: email.id, address: r.address, status: 'failed', at: now });
    c.events.push(event(email.id, 'failed', now, details));
    return { outcome: admitted, changes: c };
  }
  const held = admitted.held;
  const reached = reach(c, hooks, notice, email.reached, 'queued', now, { type: 'queued', at: now });
  c.emails.push({ id: email.id, updatedAt: now, status: 'queued', reached, error: null, errorCode: null, held: held ?? null });
  c.events.push(event(email.id, 'queued', now));
  if (held) hold(c, hooks, notice, held, now);
  return { outcome: held ? { kind: 'accepted', held } : { kind: 'accepted' }, changes: c };
}

// Reschedule and cancel (`email` undefined: the project has no such email)

/** A scheduled email's time moves; each move is its own event (the dedupe key keeps them apart). */
export function reschedule(email: Pick<LoadedEmail, 'id' | 'status'> | undefined, at: number, now: number): Decision<ScheduleChange> {
  const c = noChanges();
  if (!email) return { outcome: { kind: 'not_found' }, changes: c };
  if (email.status !== 'scheduled') return { outcome: { kind: 'not_scheduled', status: email.status }, changes: c };
  c.emails.push({ id: email.id, updatedAt: now, scheduledAt: at });
  c.events.push(event(email.id, 'rescheduled', now, { scheduled_at: new Date(at).toISOString() }, String(now)));
  return { outcome: { kind: 'done' }, changes: c };
}

/** A scheduled email will not leave: canceled, with its recipients. */
export function cancel(email: LoadedEmail | undefined, hooks: readonly Endpoint[], now: number): Decision<ScheduleChange> {
  const c = noChanges();
  if (!email) return { outcome: { kind: 'not_found' }, changes: c };
  if (email.status !== 'scheduled') return { outcome: { kind: 'not_scheduled', status: email.status }, changes: c };
  const reached = reach(c, hooks, noticeOf(email), email.reached, 'canceled', now, { type: 'canceled', at: now });
  c.emails.push({ id: email.id, updatedAt: now, status: 'canceled', reached });
  for (const r of email.recipients) if (r.status === 'queued') c.recipients.push({ emailId: email.id, address: r.address, status: 'canceled', at: now });
  c.events.push(event(email.id, 'canceled', now));
  return { outcome: { kind: 'done' }, changes: c };
}

/** What an operator's cancel of a project's mail finds open: queued, scheduled, or on its way (deferred mail is 'sending'). */
export const CANCELABLE: readonly EmailStatus[] = ['queued', 'scheduled', 'sending'];
/** Emails a backend loads and cancels per transaction: 50,000 of them make fifty short transactions, not one huge one. */
export const CANCEL_CHUNK = 1000;

/**
 * An operator cancels a project's mail (a chunk of the emails it finds open): each email still open
 * becomes 'canceled' with its recipients not yet answered (queued or sending), a 'canceled' event and
 * its webhook messages. A copy already on the wire may still be answered (common/status.ts); so an email
 * with a recipient already sent or delivered shows that. The outcome: how many emails it canceled.
 */
export function cancelOpen(emails: readonly LoadedEmail[], hooks: readonly Endpoint[], now: number): Decision<number> {
  const c = noChanges();
  let canceled = 0;
  const details = { reason: 'operator' };
  for (const email of emails) {
    if (!CANCELABLE.includes(email.status)) continue;
    const statuses = email.recipients.map((r) => {
      if (r.status !== 'queued' && r.status !== 'sending') return r.status;
      c.recipients.push({ emailId: email.id, address: r.address, status: 'canceled', at: now });
      return 'canceled' as const;
    });
    const after = emailStatusOf(statuses);
    // Every recipient is answered now, so `after` is final; an email with no recipient row still ends.
    const status = CANCELABLE.includes(after) ? 'canceled' : after;
    const reached = reach(c, hooks, noticeOf(email), email.reached, status, now, { type: 'canceled', at: now, ...details });
    c.emails.push({ id: email.id, updatedAt: now, status, reached });
    c.events.push(event(email.id, 'canceled', now, details, 'operator'));
    canceled++;
  }
  return { outcome: canceled, changes: c };
}

/** A one-click unsubscribe: the address leaves the project's bulk mail, and the email shows it. Repeats change nothing. */
export function unsubscribe(u: { projectId: string; emailId: string; address: string; source: string; at: number }): Changes {
  const c = noChanges();
  c.suppressions.push({ projectId: u.projectId, address: u.address, reason: 'unsubscribed', scope: 'bulk', emailId: u.emailId, at: u.at });
  c.events.push({ ...event(u.emailId, 'unsubscribed', u.at, { source: u.source }), recipient: u.address });
  return c;
}

// Delivery events, a run (or chunk) of one gateway's stream at a time

/** The emails the events past the cursor name: what a backend loads (and locks) for them. */
export function emailsToLoad(events: readonly GatewayEvent[], cursor: number): string[] {
  const ids = new Set<string>();
  for (const ev of events) if (ev.seq > cursor && ev.emailId) ids.add(ev.emailId);
  return [...ids];
}

/**
 * What the log records: the events past the cursor whose email exists, a report that named its
 * recipient by position given the address (one that names no recipient of the email is dropped);
 * and the cursor after them (absent when none was past it).
 */
export function toRecord(
  events: readonly GatewayEvent[],
  cursor: number,
  emails: ReadonlyMap<string, LoadedEmail>,
): { events: GatewayEvent[]; cursor?: number } {
  const out: GatewayEvent[] = [];
  let last = cursor;
  for (const ev of events) {
    if (ev.seq <= cursor) continue;
    last = Math.max(last, ev.seq);
    const email = emails.get(ev.emailId);
    if (!email) continue;
    if (ev.recipientIndex === undefined || ev.recipient) {
      out.push(ev);
      continue;
    }
    if (ev.soleRecipient && email.recipients.length !== 1) continue;
    const named = email.recipients[ev.recipientIndex];
    if (named) out.push({ ...ev, recipient: named.address });
  }
  return last > cursor ? { events: out, cursor: last } : { events: out };
}

/** The unique key of the event log: an event with the key of one recorded before repeats it. */
export const eventKey = (ev: Pick<GatewayEvent, 'emailId' | 'recipient' | 'attempt' | 'dedupe'> & { type: EmailEventType }): string =>
  JSON.stringify([ev.emailId, ev.type, ev.recipient, ev.attempt, ev.dedupe ?? '']);

/**
 * The recorded events (toRecord's, in order) applied in turn: `recorded` holds the keys the log did
 * not hold before (only the first event of the run with such a key is new; the rest repeat it). Each
 * moves its recipients through the status machine and the email to the status they give; a new
 * status is counted once, and it (or a deferral) is queued for the endpoints that want it.
 * Unsubscribes and complaints about bulk mail suppress the address for bulk mail, a bounce for all
 * mail. The changes are the end state of the run: a row's last values, each suppression once (the
 * first bounce; else the first bulk one).
 */
export function applyEvents(
  state: { emails: ReadonlyMap<string, LoadedEmail>; hooks: ReadonlyMap<string, readonly Endpoint[]> },
  events: readonly GatewayEvent[],
  recorded: ReadonlySet<string>,
): Decision<AppliedEvent[]> {
  const c = noChanges();
  const fresh = new Set(recorded);
  const working = new Map<string, { status: EmailStatus; reached: string; recipients: Array<{ address: string; status: RecipientStatus }> }>();
  const recipients = new Map<string, RecipientUpdate>();
  const emails = new Map<string, EmailUpdate>();
  const suppressions = new Map<string, SuppressionInsert>();
  const suppress = (s: SuppressionInsert) => {
    const key = JSON.stringify([s.projectId, s.address]);
    const had = suppressions.get(key);
    if (!had || (s.scope === 'all' && had.scope === 'bulk')) suppressions.set(key, s);
  };
  const applied: AppliedEvent[] = [];
  for (const ev of events) {
    if (!fresh.delete(eventKey(ev))) continue;
    const loaded = state.emails.get(ev.emailId)!;
    const projectId = loaded.projectId;
    let email = working.get(ev.emailId);
    if (!email) {
      email = { status: loaded.status, reached: loaded.reached, recipients: loaded.recipients.map((r) => ({ address: r.address, status: r.status })) };
      working.set(ev.emailId, email);
    }
    for (const r of email.recipients) {
      if (ev.recipient && r.address !== ev.recipient) continue;
      const suppression = { projectId, address: r.address, emailId: ev.emailId, at: ev.at };
      // Unsubscribes, and complaints about bulk mail, stop the project's bulk mail to the address.
      if (ev.type === 'unsubscribed' || (ev.type === 'complained' && loaded.bulk)) suppress({ ...suppression, reason: ev.type, scope: 'bulk' });
      const next = recipientStatusAfter(r.status, ev.type);
      if (!next) continue;
      r.status = next;
      recipients.set(JSON.stringify([ev.emailId, r.address]), { emailId: ev.emailId, address: r.address, status: next, at: ev.at });
      if (next === 'bounced') suppress({ ...suppression, reason: 'bounced', scope: 'all' });
    }
    const emailStatus = emailStatusOf(email.recipients.map((r) => r.status));
    if (emailStatus !== email.status || ev.type === 'deferred') {
      email.reached = reach(c, state.hooks.get(projectId) ?? [], noticeOf(loaded), email.reached, emailStatus, ev.at, {
        type: ev.type,
        at: ev.at,
        ...(ev.recipient ? { recipient: ev.recipient } : {}),
        attempt: ev.attempt,
        ...ev.details,
      });
    }
    email.status = emailStatus;
    emails.set(ev.emailId, { id: ev.emailId, updatedAt: ev.at, status: emailStatus, reached: email.reached });
    applied.push({ ...ev, emailStatus, projectId });
  }
  c.recipients.push(...recipients.values());
  c.emails.push(...emails.values());
  c.suppressions.push(...suppressions.values());
  return { outcome: applied, changes: c };
}

// Webhook messages

/** The emails whose stored request the notices' messages need and do not carry (read only for a change someone wants). */
export function requestsToRead(notices: readonly WebhookNotice[]): string[] {
  const ids = new Set<string>();
  for (const n of notices) if (n.email.request === undefined) ids.add(n.email.id);
  return [...ids];
}

/** The messages the notices queue, in order, one per endpoint (`requests`: requestsToRead's, by email id). */
export function webhookMessages(notices: readonly WebhookNotice[], requests: ReadonlyMap<string, string> = new Map()): WebhookMessage[] {
  const out: WebhookMessage[] = [];
  for (const n of notices) {
    const { email } = n;
    const req = readRequest(email.request ?? requests.get(email.id)!);
    const payload = webhookPayload(
      { id: email.id, from: email.from, to: req.to, subject: email.subject, tags: req.tags, createdAt: email.createdAt },
      n.status,
      n.at,
      n.event,
    );
    for (const webhookId of n.webhookIds) out.push({ id: prefixedId('msg'), webhookId, projectId: email.projectId, payload, at: n.at });
  }
  return out;
}

// Open and click tracking

/** The key a link is counted under (email_tracking.link_hash): a URL may be longer than an index entry may be. */
export const linkHash = (link: string): string => createHash('sha256').update(link).digest('base64url');

/** An open or a click event's dedupe key: one event per kind, link and machine-or-not per minute (the counts count every hit). */
const TRACKING_EVENT_MS = 60_000;

/** An opened or clicked event to record, with the webhook message it queues once recorded (it was not before). */
export interface TrackedEvent {
  event: EventInsert;
  notice?: WebhookNotice;
}

/**
 * Opens and clicks (control/tracking): each adds to its email's counts, and becomes an `opened` or
 * `clicked` event (at most one per email, kind, link and machine-or-not per minute: a scanner loading
 * the pixel a thousand times is one event a minute, not a thousand) with a message for the endpoints
 * that list the event or list none. The first time a person (or a provider's proxy) opens or clicks an
 * email counts once in the daily analytics. Hits of emails not loaded (unknown) are dropped. `seen`:
 * the `emailId|kind` pairs a person had already opened or clicked before these hits. The events are
 * the outcome: the backend records them (the log's key drops one recorded before, by an earlier batch
 * in the same minute), then adds trackedNotices for those it did record.
 */
export function track(
  state: { emails: ReadonlyMap<string, LoadedEmail>; hooks: ReadonlyMap<string, readonly Endpoint[]>; seen: ReadonlySet<string> },
  hits: readonly TrackingHit[],
): Decision<TrackedEvent[]> {
  const c = noChanges();
  const counts = new Map<string, TrackingCount>();
  const seen = new Set(state.seen);
  const evented = new Set<string>();
  const out: TrackedEvent[] = [];
  for (const h of hits) {
    const email = state.emails.get(h.emailId);
    if (!email) continue;
    const machine = h.agent === 'scanner';
    const key = JSON.stringify([h.emailId, h.kind, h.link]);
    const n = counts.get(key);
    if (n) {
      n.count++;
      n.bots += machine ? 1 : 0;
      n.firstAt = Math.min(n.firstAt, h.at);
      n.lastAt = Math.max(n.lastAt, h.at);
    } else counts.set(key, { emailId: h.emailId, kind: h.kind, link: h.link, count: 1, bots: machine ? 1 : 0, firstAt: h.at, lastAt: h.at });
    const type = h.kind === 'open' ? 'opened' : 'clicked';
    if (!machine && !seen.has(`${h.emailId}|${h.kind}`)) {
      seen.add(`${h.emailId}|${h.kind}`);
      c.statuses.push({ projectId: email.projectId, day: dayOf(h.at), status: type });
    }
    const dedupe = `${machine ? 'bot' : 'person'}|${Math.floor(h.at / TRACKING_EVENT_MS)}|${h.link ? linkHash(h.link) : ''}`;
    if (evented.has(`${h.emailId}|${type}|${dedupe}`)) continue;
    evented.add(`${h.emailId}|${type}|${dedupe}`);
    const details: Record<string, unknown> = {
      ...(h.link ? { link: h.link } : {}),
      user_agent: h.userAgent,
      ip: h.ip,
      bot: machine,
      ...(h.agent === 'person' ? {} : { agent: h.agent, bot_reason: h.reason ?? '' }),
    };
    const ev = event(h.emailId, type, h.at, details, dedupe);
    const webhookIds = (state.hooks.get(email.projectId) ?? []).filter((w) => w.enabled && (!w.statuses.length || w.statuses.includes(type))).map((w) => w.id);
    out.push(
      webhookIds.length
        ? { event: ev, notice: { webhookIds, email: noticeOf(email), status: email.status, at: h.at, event: { type, at: h.at, ...details } } }
        : { event: ev },
    );
  }
  c.tracking.push(...counts.values());
  return { outcome: out, changes: c };
}

/** The webhook messages of the tracked events the log recorded (`recorded`: their eventKey). */
export function trackedNotices(events: readonly TrackedEvent[], recorded: ReadonlySet<string>): Changes {
  const c = noChanges();
  for (const t of events) if (t.notice && recorded.has(eventKey(t.event))) c.webhooks.push(t.notice);
  return c;
}
