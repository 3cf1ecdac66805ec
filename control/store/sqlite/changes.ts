// Writes what the lifecycle (control/mail/lifecycle.ts) decided, inside the intent's own
// write of the group: rows, events, suppressions, counts (the daily ones summed in
// memory until the group commits, tallies.ts) and webhook messages.
import type Database from 'better-sqlite3';
import type { Db } from '../../../core/sqlite/open.js';
import { type Changes, type EmailUpdate, linkHash, requestsToRead, webhookMessages } from '../../mail/lifecycle.js';
import type { ProjectCache } from '../cache.js';
import type { WebhookRow } from '../index.js';
import type { DayTallies } from './tallies.js';
import { toWebhook } from './rows.js';

/** The columns an EmailUpdate may set. */
const EMAIL_COLUMNS: Record<Exclude<keyof EmailUpdate, 'id'>, string> = {
  updatedAt: 'updated_at',
  status: 'status',
  reached: 'reached',
  error: 'error',
  errorCode: 'error_code',
  held: 'held',
  scheduledAt: 'scheduled_at',
};

export class SqliteChanges {
  private readonly q;
  /** An update statement per set of columns (a handful: one per kind of intent). */
  private readonly updates = new Map<string, { statement: Database.Statement<unknown[]>; fields: Array<keyof EmailUpdate> }>();

  constructor(
    private readonly db: Db,
    private readonly tallies: DayTallies,
    private readonly hooks: ProjectCache<WebhookRow[]>,
  ) {
    this.q = {
      insertEmail:
        db.prepare(`INSERT INTO emails (id, project_id, status, from_addr, subject, bulk, error, error_code, created_at, updated_at, reached, system, held, scheduled_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      insertRequest: db.prepare('INSERT INTO email_requests (email_id, request) VALUES (?, ?)'),
      insertRecipient: db.prepare('INSERT INTO email_recipients (email_id, address, kind, status, updated_at, position) VALUES (?, ?, ?, ?, ?, ?)'),
      insertAttachment: db.prepare('INSERT INTO email_attachments (email_id, position, size, content) VALUES (?, ?, ?, ?)'),
      insertEvent: db.prepare('INSERT OR IGNORE INTO email_events (email_id, type, recipient, attempt, at, details, dedupe) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      setRecipient: db.prepare('UPDATE email_recipients SET status = ?, updated_at = ? WHERE email_id = ? AND address = ?'),
      suppressBulk: db.prepare(`INSERT INTO suppressions (project_id, address, reason, scope, email_id, created_at) VALUES (?, ?, ?, 'bulk', ?, ?)
        ON CONFLICT(project_id, address) DO NOTHING`),
      suppressAll: db.prepare(`INSERT INTO suppressions (project_id, address, reason, scope, email_id, created_at) VALUES (?, ?, ?, 'all', ?, ?)
        ON CONFLICT(project_id, address) DO UPDATE SET scope = 'all', reason = excluded.reason, email_id = excluded.email_id, created_at = excluded.created_at
        WHERE suppressions.scope <> 'all'`),
      addBulk: db.prepare(
        'INSERT INTO bulk_daily (project_id, day, count) VALUES (?, ?, ?) ON CONFLICT(project_id, day) DO UPDATE SET count = count + excluded.count',
      ),
      addSubject: db.prepare(`INSERT INTO bulk_subject_daily (project_id, day, subject_hash, count) VALUES (?, ?, ?, ?)
        ON CONFLICT(project_id, day, subject_hash) DO UPDATE SET count = count + excluded.count`),
      request: db.prepare('SELECT request FROM email_requests WHERE email_id = ?').pluck(),
      webhooks: db.prepare('SELECT * FROM webhooks WHERE project_id = ? ORDER BY created_at, id'),
      insertDelivery: db.prepare(`INSERT INTO webhook_deliveries (id, webhook_id, project_id, payload, attempt, next_attempt_at, status, created_at)
        VALUES (?, ?, ?, ?, 0, ?, 'pending', ?)`),
      addTracking: db.prepare(`INSERT INTO email_tracking (email_id, kind, link_hash, link, count, bots, first_at, last_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT(email_id, kind, link_hash) DO UPDATE SET count = count + excluded.count, bots = bots + excluded.bots,
        first_at = min(first_at, excluded.first_at), last_at = max(last_at, excluded.last_at)`),
    };
  }

  /** The project's webhook endpoints (cached; every change to them publishes the project). */
  hooksOf(projectId: string): WebhookRow[] {
    return this.hooks.get(projectId, () => this.q.webhooks.all(projectId).map(toWebhook));
  }

  write(c: Changes): void {
    for (const e of c.inserts) {
      this.q.insertEmail.run(
        e.id,
        e.projectId,
        e.status,
        e.from,
        e.subject,
        e.bulk ? 1 : 0,
        e.error,
        e.errorCode,
        e.createdAt,
        e.createdAt,
        e.reached,
        e.system ? 1 : 0,
        e.held,
        e.scheduledAt,
      );
      this.q.insertRequest.run(e.id, e.request);
      for (const [i, content] of e.attachments.entries()) this.q.insertAttachment.run(e.id, i, content.length, content);
      for (const r of e.recipients) this.q.insertRecipient.run(e.id, r.address, r.kind, r.status, e.createdAt, r.position);
    }
    for (const ev of c.events)
      this.q.insertEvent.run(ev.emailId, ev.type, ev.recipient, ev.attempt, ev.at, ev.details === null ? null : JSON.stringify(ev.details), ev.dedupe);
    for (const s of c.suppressions) (s.scope === 'all' ? this.q.suppressAll : this.q.suppressBulk).run(s.projectId, s.address, s.reason, s.emailId, s.at);
    for (const r of c.recipients) this.q.setRecipient.run(r.status, r.at, r.emailId, r.address);
    for (const u of c.emails) this.update(u);
    for (const s of c.statuses) this.tallies.countStatus(s.projectId, s.day, s.status);
    for (const u of c.usage) this.tallies.countUsage(u.projectId, u.day);
    for (const b of c.bulk) {
      this.q.addSubject.run(b.projectId, b.day, b.subjectHash, b.recipients);
      this.q.addBulk.run(b.projectId, b.day, b.recipients);
    }
    for (const t of c.tracking) this.q.addTracking.run(t.emailId, t.kind, linkHash(t.link), t.link, t.count, t.bots, t.firstAt, t.lastAt);
    if (c.webhooks.length) {
      const requests = new Map(requestsToRead(c.webhooks).map((id) => [id, this.q.request.get(id) as string]));
      for (const m of webhookMessages(c.webhooks, requests)) this.q.insertDelivery.run(m.id, m.webhookId, m.projectId, m.payload, m.at, m.at);
    }
  }

  private update(u: EmailUpdate): void {
    const fields = (Object.keys(u) as Array<keyof EmailUpdate>).filter((k) => k !== 'id');
    const key = fields.join();
    let prepared = this.updates.get(key);
    if (!prepared) {
      const set = fields.map((f) => `${EMAIL_COLUMNS[f as Exclude<keyof EmailUpdate, 'id'>]} = ?`).join(', ');
      prepared = { statement: this.db.prepare(`UPDATE emails SET ${set} WHERE id = ?`), fields };
      this.updates.set(key, prepared);
    }
    prepared.statement.run(...prepared.fields.map((f) => u[f]), u.id);
  }
}
