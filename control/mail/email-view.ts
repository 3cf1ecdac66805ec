// The public shape of an email (GET /v1/emails/:id, GET /v1/emails and the gRPC
// GetEmail): the spec's fields, and beside them Resend's (`object`, `last_event`,
// `html`, `text`, `scheduled_at`, `message_id`), so its SDK and code written for it read them.
import type { EmailEventType, EmailStatus, EmailRow, EventRow, Store, TrackingCountRow } from '../store/index.js';
import { domainOf, parseMailbox } from '../../common/address.js';
import { readRequest, type StoredRequest } from './vocabulary.js';

const iso = (ms: number) => new Date(ms).toISOString();

export type EmailView = Record<string, unknown> & {
  id: string;
  status: EmailStatus;
  events: Array<Record<string, unknown> & { type: EmailEventType; at: string }>;
};

/** Resend's `last_event` for our status (its vocabulary is close but not the same). */
function lastEvent(email: EmailRow, events?: EventRow[]): string {
  // Opened or clicked by a person after it was delivered (or sent): Resend's last_event says so.
  if ((email.status === 'delivered' || email.status === 'sent') && events) {
    for (let i = events.length - 1; i >= 0; i--) {
      const e = events[i]!;
      if ((e.type === 'opened' || e.type === 'clicked') && e.details?.bot !== true) return e.type;
    }
  }
  switch (email.status) {
    case 'sending':
      return events?.at(-1)?.type === 'deferred' ? 'delivery_delayed' : 'queued';
    case 'rejected':
      return 'bounced';
    case 'failed':
      return email.errorCode === 'RECIPIENT_IN_SUPPRESSION_LIST' ? 'suppressed' : 'failed';
    default:
      return email.status;
  }
}

/** The fields an email has in a list and in its own view. */
function summary(email: EmailRow, r: StoredRequest, events?: EventRow[]): Record<string, unknown> {
  const sender = parseMailbox(email.from);
  return {
    id: email.id,
    status: email.status,
    from: email.from,
    to: r.to,
    cc: r.cc,
    bcc: r.bcc,
    reply_to: r.reply_to,
    subject: email.subject,
    tags: r.tags,
    bulk: email.bulk,
    created_at: iso(email.createdAt),
    updated_at: iso(email.updatedAt),
    scheduled_at: email.scheduledAt === null ? null : iso(email.scheduledAt),
    last_event: lastEvent(email, events),
    message_id: sender ? `<${email.id}@${domainOf(sender.address)}>` : null,
  };
}

/** An email in GET /v1/emails: no body, recipients or events. */
export function emailListItem(email: EmailRow): Record<string, unknown> {
  return summary(email, readRequest(email.request));
}

export async function emailView(store: Store, projectId: string, id: string): Promise<EmailView | undefined> {
  const found = await store.emails.get(projectId, id);
  if (!found) return undefined;
  const { email, recipients, events } = found;
  const r = readRequest(email.request);
  const tracking = trackingSummary(await store.tracking.counts(email.id));
  return {
    object: 'email',
    ...summary(email, r, events),
    // The platform's own mail (sign-in codes) never shows its body: the code is for the user alone.
    html: r.system ? null : (r.html ?? null),
    text: r.system ? null : (r.text ?? null),
    // What describes the files (control/mail/attachments.ts); their content is never shown.
    attachments: r.attachments ?? [],
    id: email.id,
    status: email.status,
    error: email.error ? { error: email.error, code: email.errorCode } : null,
    tracking,
    recipients: recipients.map((x) => ({ email: x.address, kind: x.kind, status: x.status, updated_at: iso(x.updatedAt) })),
    events: events.map((e) => ({
      type: e.type,
      at: iso(e.at),
      ...(e.recipient ? { recipient: e.recipient } : {}),
      ...(e.attempt ? { attempt: e.attempt } : {}),
      ...(e.details ?? {}),
    })),
  };
}

type Count = { count: number; bots: number; first_at: string | null; last_at: string | null };

/** Opens and clicks, with the machines' part (control/tracking/bots.ts), and each link clicked. */
export function trackingSummary(rows: TrackingCountRow[]): { opens: Count; clicks: Count & { links: Array<Count & { link: string }> } } {
  const sum = (list: TrackingCountRow[]): Count => ({
    count: list.reduce((n, x) => n + x.count, 0),
    bots: list.reduce((n, x) => n + x.bots, 0),
    first_at: list.length ? iso(Math.min(...list.map((x) => x.firstAt))) : null,
    last_at: list.length ? iso(Math.max(...list.map((x) => x.lastAt))) : null,
  });
  const clicks = rows.filter((x) => x.kind === 'click');
  return {
    opens: sum(rows.filter((x) => x.kind === 'open')),
    clicks: { ...sum(clicks), links: clicks.map((x) => ({ link: x.link, ...sum([x]) })) },
  };
}
