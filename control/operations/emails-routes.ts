// The operator's emails (admin listener, behind the admin guard; the console's Emails page): a search
// over every project and one email with its recipients and the timeline of its events. The operator
// sees every project's mail; the `project` filter narrows to one. The cost is bounded by the store
// (Emails.search): an id or a recipient is read by index, and a call examines at most 5,000 emails
// (2,000 with a tag filter) and answers `next` to go on.
import type { FastifyPluginAsync } from 'fastify';
import { invalid, notFound } from '../../core/errors.js';
import { EMAIL_STATUSES } from '../../common/status.js';
import { adminErrors, limitQuery, projectBySlug, slugSchema, slugsOf } from '../admin/common.js';
import { instant } from '../mail/routes.js';
import { readRequest } from '../mail/vocabulary.js';
import type { EmailStatus, EventRow, Store } from '../store/index.js';

export interface EmailsRoutesOptions {
  store: Store;
}

const hide = { hide: true, tags: ['admin'] };
const emailId = { type: 'string', pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' } as const;
/** Text to look for: no control characters (nothing a stored address or subject holds, and no NUL for PostgreSQL). */
const text = (maxLength: number, description: string) =>
  ({ type: 'string', minLength: 1, maxLength, pattern: '^[^\\u0000-\\u001f\\u007f]*$', description }) as const;
const nullable = { type: ['string', 'null'] } as const;
const iso = (ms: number) => new Date(ms).toISOString();

const tagSchema = {
  type: 'object',
  required: ['name', 'value'],
  properties: { name: { type: 'string' }, value: { ...nullable, description: 'null for a tag given as a plain string without `:`.' } },
} as const;

const listItem = {
  type: 'object',
  required: ['id', 'project', 'from', 'to', 'subject', 'status', 'created_at', 'tags'],
  properties: {
    id: { type: 'string' },
    project: { type: 'string', description: "The project's slug." },
    from: { type: 'string' },
    to: { type: 'array', items: { type: 'string' } },
    subject: { type: 'string' },
    status: { type: 'string', enum: [...EMAIL_STATUSES] },
    created_at: { type: 'string' },
    tags: { type: 'array', items: tagSchema },
  },
} as const;

const listSchema = {
  type: 'object',
  required: ['data', 'has_more', 'next', 'scanned_until'],
  properties: {
    data: { type: 'array', items: listItem },
    has_more: { type: 'boolean', description: 'More may lie further back: ask again with `after` = `next`.' },
    next: { ...nullable, description: 'The cursor of the next page (`after`); null when the range was searched to its end.' },
    scanned_until: {
      ...nullable,
      description:
        'How far back this call looked: the creation time of the oldest email examined, when it stopped before the end of the range (a page may then hold fewer than `limit` emails); null when it reached the end.',
    },
  },
} as const;

const eventSchema = {
  type: 'object',
  required: ['type', 'recipient', 'attempt', 'at', 'provider', 'mx', 'code', 'enhanced_code', 'response', 'cause', 'rule'],
  properties: {
    type: { type: 'string' },
    recipient: nullable,
    attempt: { type: ['integer', 'null'] },
    at: { type: 'string' },
    provider: { ...nullable, description: 'The receiving provider the gateway counted the attempt under.' },
    mx: { ...nullable, description: 'The MX host that answered.' },
    code: { type: ['integer', 'null'], description: "The remote's SMTP reply code, e.g. 550 (a sent email's is the 250 that accepted it)." },
    enhanced_code: { ...nullable, description: 'The enhanced status code (RFC 3463), e.g. `5.1.1`.' },
    response: { ...nullable, description: "The remote's answer, or control's reason for an event of its own (a hold, a failure, a cancel)." },
    cause: {
      ...nullable,
      description:
        'Who delayed or refused it: receiver, network, pacing, shaping, suspended, volume; for an email control failed itself, its error code (e.g. QUOTA_EXCEEDED).',
    },
    rule: { ...nullable, description: "The shaping rule, or the operator's suspension (`operator:<id>`), that held it." },
    tls: {
      type: 'object',
      description:
        "The attempt's TLS (sent, deferred, bounced): over STARTTLS or not, its version, whether the certificate verified for the MX name, and what required verified TLS (domain, provider, mta-sts; '' opportunistic); absent when not known.",
      properties: {
        used: { type: 'boolean' },
        version: { type: 'string' },
        verified: { type: 'boolean' },
        policy: { type: 'string' },
        note: { type: 'string' },
      },
    },
  },
} as const;

const detailSchema = {
  type: 'object',
  required: [
    'id',
    'project',
    'from',
    'to',
    'cc',
    'bcc',
    'reply_to',
    'subject',
    'status',
    'created_at',
    'scheduled_at',
    'tags',
    'bulk',
    'html_size',
    'text_size',
    'recipients',
    'events',
  ],
  properties: {
    id: { type: 'string' },
    project: { type: 'object', required: ['slug', 'name'], properties: { slug: { type: 'string' }, name: { type: 'string' } } },
    from: { type: 'string' },
    to: { type: 'array', items: { type: 'string' } },
    cc: { type: 'array', items: { type: 'string' } },
    bcc: { type: 'array', items: { type: 'string' } },
    reply_to: { type: 'array', items: { type: 'string' } },
    subject: { type: 'string' },
    status: { type: 'string', enum: [...EMAIL_STATUSES] },
    created_at: { type: 'string' },
    scheduled_at: nullable,
    tags: { type: 'array', items: tagSchema },
    bulk: { type: 'boolean' },
    html_size: { type: ['integer', 'null'], description: 'Bytes of the HTML body (UTF-8); null when there is none (or no longer: the platform’s own mail).' },
    text_size: { type: ['integer', 'null'], description: 'Bytes of the text body (UTF-8); null when there is none.' },
    recipients: {
      type: 'array',
      items: {
        type: 'object',
        required: ['address', 'kind', 'status', 'updated_at'],
        properties: {
          address: { type: 'string' },
          kind: { type: 'string', enum: ['to', 'cc', 'bcc'] },
          status: { type: 'string' },
          updated_at: { type: 'string' },
        },
      },
    },
    events: { type: 'array', description: 'Oldest first.', items: eventSchema },
  },
} as const;

interface SearchQuery {
  project?: string;
  id?: string;
  to?: string;
  from?: string;
  subject?: string;
  status?: EmailStatus;
  tag?: string;
  since?: string;
  until?: string;
  limit?: string;
  after?: string;
}

const searchQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    project: { ...slugSchema, description: "A project's slug: its emails only." },
    id: { ...emailId, description: 'An email id: that email (with the other filters, or nothing).' },
    to: text(320, 'A recipient address (to, cc or bcc), exactly, in any case.'),
    from: text(320, 'Part of the sender (`Name <address>`), in any case.'),
    subject: text(998, 'Part of the subject, in any case. Taken as text: `%` and `_` are no wildcards.'),
    status: { type: 'string', enum: [...EMAIL_STATUSES] },
    tag: text(513, '`name:value` for that tag, or `name` for the tag `name` and any `name:…`.'),
    since: { type: 'string', maxLength: 40, description: 'Created at or after this ISO 8601 date or date-time.' },
    until: { type: 'string', maxLength: 40, description: 'Created at or before this ISO 8601 date or date-time.' },
    limit: { ...limitQuery, description: '1 to 100; 25 when omitted.' },
    after: { ...emailId, description: 'The `next` of the previous page.' },
  },
} as const;

/** A stored tag as the console shows it: `name:value` split at the first `:`, a plain string as a name. */
function tagOut(tag: string): { name: string; value: string | null } {
  const i = tag.indexOf(':');
  return i < 0 ? { name: tag, value: null } : { name: tag.slice(0, i), value: tag.slice(i + 1) };
}

const stringOr = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** An event with what the gateway recorded of the remote's answer (control/delivery/gateway-events.ts), or control's own reason. */
export function eventOut(e: EventRow) {
  const d = e.details ?? {};
  const response = stringOr(d.response) ?? stringOr(d.reason);
  // A sent event's answer is the MX's reply to the end of DATA, which for an accepted message is 250 (the
  // gateway keeps only its text); other answers start with their code.
  const reply = typeof d.response === 'string' ? /^([2-5]\d\d)(?!\d)/.exec(d.response)?.[1] : undefined;
  const code = reply !== undefined ? Number(reply) : e.type === 'sent' && typeof d.response === 'string' ? 250 : null;
  return {
    type: e.type,
    recipient: e.recipient || null,
    attempt: e.attempt || null,
    at: iso(e.at),
    provider: stringOr(d.provider),
    mx: stringOr(d.mx),
    code,
    enhanced_code: stringOr(d.enhanced_code),
    response,
    cause: stringOr(d.cause) ?? stringOr(d.code),
    rule: stringOr(d.rule),
    // Only where the gateway said (gateway/tls): other events are as they were.
    ...(d.tls && typeof d.tls === 'object' ? { tls: d.tls as Record<string, unknown> } : {}),
  };
}

const byteSize = (s: string | undefined) => (s === undefined ? null : Buffer.byteLength(s, 'utf8'));

export const emailsRoutes: FastifyPluginAsync<EmailsRoutesOptions> = async (app, { store }) => {
  app.get<{ Querystring: SearchQuery }>(
    '/admin/v1/emails',
    {
      schema: {
        ...hide,
        summary: "Search every project's emails, newest first, a page at a time",
        description:
          'An id or a recipient is found by index; a call examines at most 5,000 emails (2,000 with a tag filter, whose walk reads the bodies) newest first within the time range, and answers `next` (and `scanned_until`) to go on, so a page may hold fewer than `limit` emails and still have more.',
        querystring: searchQuerySchema,
        response: { 200: listSchema, ...adminErrors },
      },
    },
    async (req) => {
      const q = req.query;
      const since = q.since === undefined ? undefined : instant('since', q.since);
      const until = q.until === undefined ? undefined : instant('until', q.until);
      if (since !== undefined && until !== undefined && since > until) throw invalid('since must not be after until');
      const project = q.project === undefined ? undefined : await projectBySlug(store, q.project);
      const page = await store.emails.search({
        limit: q.limit ? Number(q.limit) : 25,
        ...(project ? { projectId: project.id } : {}),
        ...(q.id !== undefined ? { id: q.id.toLowerCase() } : {}),
        ...(q.after !== undefined ? { after: q.after.toLowerCase() } : {}),
        ...(q.to !== undefined ? { to: q.to } : {}),
        ...(q.from !== undefined ? { from: q.from } : {}),
        ...(q.subject !== undefined ? { subject: q.subject } : {}),
        ...(q.status !== undefined ? { status: q.status } : {}),
        ...(q.tag !== undefined ? { tag: q.tag } : {}),
        ...(since !== undefined ? { since } : {}),
        ...(until !== undefined ? { until } : {}),
      });
      const slugs = await slugsOf(
        store,
        page.emails.map((e) => e.projectId),
        project,
      );
      return {
        data: page.emails.map((e) => ({
          id: e.id,
          project: slugs.get(e.projectId) ?? e.projectId,
          from: e.from,
          to: e.to,
          subject: e.subject,
          status: e.status,
          created_at: iso(e.createdAt),
          tags: e.tags.map(tagOut),
        })),
        has_more: page.hasMore,
        next: page.next,
        scanned_until: page.scannedUntil === null ? null : iso(page.scannedUntil),
      };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/admin/v1/emails/:id',
    {
      schema: {
        ...hide,
        summary: 'One email of any project: its recipients and the timeline of its events with the remote answers',
        params: { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 100 } } },
        response: { 200: detailSchema, ...adminErrors },
      },
    },
    async (req) => {
      const id = req.params.id.toLowerCase();
      // Anything but an email id names no email (and never reaches the store).
      const found = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id) ? await store.emails.find(id) : undefined;
      if (!found) throw notFound('Email not found');
      const { email, recipients, events } = found;
      const r = readRequest(email.request);
      const project = await store.projects.byId(email.projectId);
      return {
        id: email.id,
        project: { slug: project?.slug ?? email.projectId, name: project?.name ?? '' },
        from: email.from,
        to: r.to ?? [],
        cc: r.cc ?? [],
        bcc: r.bcc ?? [],
        reply_to: r.reply_to ?? [],
        subject: email.subject,
        status: email.status,
        created_at: iso(email.createdAt),
        scheduled_at: email.scheduledAt === null ? null : iso(email.scheduledAt),
        tags: (r.tags ?? []).map(tagOut),
        bulk: email.bulk,
        html_size: byteSize(r.html),
        text_size: byteSize(r.text),
        recipients: recipients.map((x) => ({ address: x.address, kind: x.kind, status: x.status, updated_at: iso(x.updatedAt) })),
        events: events.map(eventOut),
      };
    },
  );
};
