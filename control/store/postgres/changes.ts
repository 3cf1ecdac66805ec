// Writes what the lifecycle (control/mail/lifecycle.ts) decided, inside the intent's
// transaction, set-based: one statement per table (two for suppressions, one per scope
// rule), whatever the number of emails or events. Counts are summed per transaction and
// added in key order: two nodes' transactions lock the counter rows in the same order.
import { type Changes, type EmailUpdate, linkHash, requestsToRead, webhookMessages } from '../../mail/lifecycle.js';
import type { ProjectCache } from '../cache.js';
import type { WebhookRow } from '../index.js';
import type { Tx } from './db.js';
import { columnsOf, toWebhook } from './rows.js';

/** A project's webhooks, cached per node (a write publishes the project on the invalidator). */
export type WebhookCache = ProjectCache<Promise<WebhookRow[]>>;

type Counts = Map<string, { key: string[]; n: number }>;

/** Adds `n` to the counter under `key` (a row of analytics_daily, usage_daily, …). */
export function count(m: Counts, key: string[], n: number): void {
  const k = key.join('|');
  const c = m.get(k);
  if (c) c.n += n;
  else m.set(k, { key, n });
}

/** Adds the counts to their rows in key order; `keys` name the key columns. */
export async function addCounts(tx: Tx, table: string, keys: string[], counts: Counts): Promise<void> {
  const list = [...counts.entries()].filter(([, v]) => v.n !== 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (!list.length) return;
  const columns = keys.map((_, i) => list.map(([, v]) => v.key[i]!));
  const casts = keys.map((_, i) => `$${i + 1}::text[]`).join(', ');
  await tx.query(
    `INSERT INTO ${table} (${keys.join(', ')}, count) SELECT * FROM unnest(${casts}, $${keys.length + 1}::int[])
     ON CONFLICT (${keys.join(', ')}) DO UPDATE SET count = ${table}.count + excluded.count`,
    [...columns, list.map(([, v]) => v.n)],
  );
}

/** The projects' webhook endpoints, read on this transaction's connection when not cached (asking the pool for another could wait on itself). */
export async function hooksOf(tx: Tx, cache: WebhookCache, projectIds: Iterable<string>): Promise<Map<string, WebhookRow[]>> {
  const out = new Map<string, WebhookRow[]>();
  for (const projectId of projectIds) {
    if (out.has(projectId)) continue;
    const list = cache.get(projectId, () =>
      tx.query('SELECT * FROM webhooks WHERE project_id = $1 ORDER BY created_at, id', [projectId]).then((r) => r.rows.map(toWebhook)),
    );
    list.catch(() => cache.clear());
    out.set(projectId, await list);
  }
  return out;
}

/** The columns an EmailUpdate may set, with their types. */
const EMAIL_COLUMNS: Record<Exclude<keyof EmailUpdate, 'id'>, [string, string]> = {
  updatedAt: ['updated_at', 'bigint'],
  status: ['status', 'text'],
  reached: ['reached', 'text'],
  error: ['error', 'text'],
  errorCode: ['error_code', 'text'],
  held: ['held', 'text'],
  scheduledAt: ['scheduled_at', 'bigint'],
};

export async function writeChanges(tx: Tx, c: Changes): Promise<void> {
  if (c.inserts.length) {
    await tx.query(
      `INSERT INTO emails (id, project_id, status, from_addr, subject, bulk, request, error, error_code, created_at, updated_at, reached, system, held, scheduled_at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bool[], $7::text[], $8::text[], $9::text[],
         $10::bigint[], $11::bigint[], $12::text[], $13::bool[], $14::text[], $15::bigint[])`,
      columnsOf(
        c.inserts.map((e) => [
          e.id,
          e.projectId,
          e.status,
          e.from,
          e.subject,
          e.bulk,
          e.request,
          e.error,
          e.errorCode,
          e.createdAt,
          e.createdAt,
          e.reached,
          e.system,
          e.held,
          e.scheduledAt,
        ]),
        15,
      ),
    );
    // One statement per file: a Buffer parameter travels in binary, where an array of them would be hex text.
    for (const e of c.inserts)
      for (const [i, content] of e.attachments.entries())
        await tx.query('INSERT INTO email_attachments (email_id, position, size, content) VALUES ($1, $2, $3, $4)', [e.id, i, content.length, content]);
    await tx.query(
      `INSERT INTO email_recipients (email_id, address, kind, status, updated_at, position)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::int[])`,
      columnsOf(
        c.inserts.flatMap((e) => e.recipients.map((r) => [e.id, r.address, r.kind, r.status, e.createdAt, r.position])),
        6,
      ),
    );
  }
  if (c.events.length) {
    await tx.query(
      `INSERT INTO email_events (email_id, type, recipient, attempt, at, details, dedupe)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::bigint[], $6::jsonb[], $7::text[])
       ON CONFLICT DO NOTHING`,
      columnsOf(
        c.events.map((ev) => [ev.emailId, ev.type, ev.recipient, ev.attempt, ev.at, ev.details === null ? null : JSON.stringify(ev.details), ev.dedupe]),
        7,
      ),
    );
  }
  const bulk = c.suppressions.filter((s) => s.scope === 'bulk');
  if (bulk.length) {
    await tx.query(
      `INSERT INTO suppressions (project_id, address, reason, scope, email_id, created_at)
       SELECT p, a, r, 'bulk', e, at FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) AS x(p, a, r, e, at)
       ON CONFLICT (project_id, address) DO NOTHING`,
      columnsOf(
        bulk.map((s) => [s.projectId, s.address, s.reason, s.emailId, s.at]),
        5,
      ),
    );
  }
  const all = c.suppressions.filter((s) => s.scope === 'all');
  if (all.length) {
    await tx.query(
      `INSERT INTO suppressions (project_id, address, reason, scope, email_id, created_at)
       SELECT p, a, r, 'all', e, at FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) AS x(p, a, r, e, at)
       ON CONFLICT (project_id, address) DO UPDATE SET scope = 'all', reason = excluded.reason, email_id = excluded.email_id, created_at = excluded.created_at
       WHERE suppressions.scope <> 'all'`,
      columnsOf(
        all.map((s) => [s.projectId, s.address, s.reason, s.emailId, s.at]),
        5,
      ),
    );
  }
  if (c.recipients.length) {
    await tx.query(
      `UPDATE email_recipients r SET status = x.s, updated_at = x.at
       FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS x(e, a, s, at) WHERE r.email_id = x.e AND r.address = x.a`,
      columnsOf(
        c.recipients.map((r) => [r.emailId, r.address, r.status, r.at]),
        4,
      ),
    );
  }
  await updateEmails(tx, c.emails);
  if (c.webhooks.length) {
    const unread = requestsToRead(c.webhooks);
    const requests = new Map<string, string>();
    if (unread.length) {
      const r = await tx.query<{ id: string; request: string }>('SELECT id, request FROM emails WHERE id = ANY($1::text[])', [unread]);
      for (const row of r.rows) requests.set(row.id, row.request);
    }
    const messages = webhookMessages(c.webhooks, requests);
    await tx.query(
      `INSERT INTO webhook_deliveries (id, webhook_id, project_id, payload, attempt, next_attempt_at, status, created_at)
       SELECT id, w, p, payload, 0, at, 'pending', at FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) AS x(id, w, p, payload, at)`,
      columnsOf(
        messages.map((m) => [m.id, m.webhookId, m.projectId, m.payload, m.at]),
        5,
      ),
    );
  }
  if (c.tracking.length) {
    // In key order, as the counters: two nodes' batches lock the rows in the same order.
    const rows = [...c.tracking].map((t) => ({ ...t, hash: linkHash(t.link) }));
    rows.sort((a, b) => (a.emailId + a.kind + a.hash < b.emailId + b.kind + b.hash ? -1 : 1));
    await tx.query(
      `INSERT INTO email_tracking (email_id, kind, link_hash, link, count, bots, first_at, last_at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::int[], $7::bigint[], $8::bigint[])
       ON CONFLICT (email_id, kind, link_hash) DO UPDATE SET count = email_tracking.count + excluded.count, bots = email_tracking.bots + excluded.bots,
         first_at = LEAST(email_tracking.first_at, excluded.first_at), last_at = GREATEST(email_tracking.last_at, excluded.last_at)`,
      columnsOf(
        rows.map((t) => [t.emailId, t.kind, t.hash, t.link, t.count, t.bots, t.firstAt, t.lastAt]),
        8,
      ),
    );
  }
  const statuses: Counts = new Map();
  for (const s of c.statuses) count(statuses, [s.projectId, s.day, s.status], 1);
  await addCounts(tx, 'analytics_daily', ['project_id', 'day', 'status'], statuses);
  if (c.usage.length) {
    const months: Counts = new Map();
    const days: Counts = new Map();
    for (const u of c.usage) {
      count(months, [u.projectId, u.day.slice(0, 7)], 1);
      count(days, [u.projectId, u.day], 1);
    }
    await addCounts(tx, 'usage_monthly', ['project_id', 'month'], months);
    await addCounts(tx, 'usage_daily', ['project_id', 'day'], days);
  }
  if (c.bulk.length) {
    const days: Counts = new Map();
    const subjects: Counts = new Map();
    for (const b of c.bulk) {
      count(days, [b.projectId, b.day], b.recipients);
      count(subjects, [b.projectId, b.day, b.subjectHash], b.recipients);
    }
    await addCounts(tx, 'bulk_daily', ['project_id', 'day'], days);
    await addCounts(tx, 'bulk_subject_daily', ['project_id', 'day', 'subject_hash'], subjects);
  }
}

/** The email rows' new values: one statement per set of columns changed (one kind of intent, one statement). */
async function updateEmails(tx: Tx, updates: EmailUpdate[]): Promise<void> {
  const shapes = new Map<string, EmailUpdate[]>();
  for (const u of updates) {
    const key = Object.keys(u).join();
    const list = shapes.get(key);
    if (list) list.push(u);
    else shapes.set(key, [u]);
  }
  for (const list of shapes.values()) {
    const fields = (Object.keys(list[0]!) as Array<keyof EmailUpdate>).filter((k) => k !== 'id');
    const set = fields.map((f, i) => `${EMAIL_COLUMNS[f as Exclude<keyof EmailUpdate, 'id'>][0]} = x.c${i}`).join(', ');
    const casts = fields.map((f, i) => `$${i + 2}::${EMAIL_COLUMNS[f as Exclude<keyof EmailUpdate, 'id'>][1]}[]`).join(', ');
    const names = fields.map((_, i) => `c${i}`).join(', ');
    await tx.query(
      `UPDATE emails m SET ${set} FROM unnest($1::text[], ${casts}) AS x(id, ${names}) WHERE m.id = x.id`,
      columnsOf(
        list.map((u) => [u.id, ...fields.map((f) => u[f])]),
        fields.length + 1,
      ),
    );
  }
}
