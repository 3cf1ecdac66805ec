// Queue control in SQLite: the operator audit log, suspensions, cancel orders, and a project's
// cancel (a chunk of its open mail per write of the group: the writer is never held for 50,000 emails).
import type Database from 'better-sqlite3';
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import { CANCEL_CHUNK, CANCELABLE, cancelOpen } from '../../mail/lifecycle.js';
import type { CancelOrderRow, EmailStatus, OperatorAuditEntry, OperatorAuditQuery, Operations, SuspensionRow } from '../index.js';
import type { SqliteChanges } from './changes.js';
import { toLoadedEmail } from './rows.js';

const toEntry = (r: any): OperatorAuditEntry => ({
  id: r.id,
  at: r.at,
  action: r.action,
  actor: r.actor,
  target: r.target,
  details: JSON.parse(r.details),
  emails: r.emails,
});

const toSuspension = (r: any): SuspensionRow => ({
  id: r.id,
  provider: r.provider,
  projectId: r.project_id,
  until: r.until_at,
  reason: r.reason,
  createdAt: r.created_at,
});

/** Emails read per slice of a project's mail (a few milliseconds of reading). */
const SCAN_SLICE = 5000;

export class SqliteOperations implements Operations {
  private readonly q: Record<string, Database.Statement<unknown[]>>;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
    private readonly changes: SqliteChanges,
  ) {
    this.q = {
      audit: db.prepare('INSERT INTO operator_audit (id, at, action, actor, target, details, emails) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      cursor: db.prepare('SELECT seq FROM operator_audit WHERE id = ?').pluck(),
      page: db.prepare('SELECT * FROM operator_audit ORDER BY seq DESC LIMIT ?'),
      pageBefore: db.prepare('SELECT * FROM operator_audit WHERE seq < ? ORDER BY seq DESC LIMIT ?'),
      suspend: db.prepare('INSERT INTO queue_suspensions (id, provider, project_id, until_at, reason, created_at) VALUES (?, ?, ?, ?, ?, ?)'),
      suspensions: db.prepare('SELECT * FROM queue_suspensions WHERE until_at IS NULL OR until_at > ? ORDER BY created_at, id'),
      suspension: db.prepare('SELECT * FROM queue_suspensions WHERE id = ?'),
      resume: db.prepare('DELETE FROM queue_suspensions WHERE id = ?'),
      order: db.prepare('INSERT INTO cancel_orders (project_id, accepted_before, ordered_at) VALUES (?, ?, ?)'),
      orders: db.prepare('SELECT * FROM cancel_orders WHERE ordered_at >= ? ORDER BY ordered_at'),
      pruneOrders: db.prepare('DELETE FROM cancel_orders WHERE ordered_at < ?'),
      // A slice of the project's mail in id order (emails_project_id): what a cancel looks through.
      slice: db.prepare('SELECT id, status, created_at FROM emails WHERE project_id = ? AND id > ? ORDER BY id LIMIT ?'),
      email: db.prepare('SELECT * FROM emails WHERE id = ?'),
      recipients: db.prepare('SELECT address, kind, status FROM email_recipients WHERE email_id = ? ORDER BY position'),
    };
  }

  audit(e: OperatorAuditEntry): Promise<void> {
    return this.writer.run(() => void this.q.audit!.run(e.id, e.at, e.action, e.actor, e.target, JSON.stringify(e.details), e.emails));
  }

  async auditLog(q: OperatorAuditQuery): Promise<{ entries: OperatorAuditEntry[]; hasMore: boolean } | undefined> {
    let rows: unknown[];
    if (q.before !== undefined) {
      const seq = this.q.cursor!.get(q.before) as number | undefined;
      if (seq === undefined) return undefined;
      rows = this.q.pageBefore!.all(seq, q.limit + 1);
    } else rows = this.q.page!.all(q.limit + 1);
    return { entries: rows.slice(0, q.limit).map(toEntry), hasMore: rows.length > q.limit };
  }

  suspend(s: SuspensionRow): Promise<void> {
    return this.writer.run(() => void this.q.suspend!.run(s.id, s.provider, s.projectId, s.until, s.reason, s.createdAt));
  }

  async suspensions(now: number): Promise<SuspensionRow[]> {
    return this.q.suspensions!.all(now).map(toSuspension);
  }

  resume(id: string): Promise<SuspensionRow | undefined> {
    return this.writer.run(() => {
      const row = this.q.suspension!.get(id);
      if (!row) return undefined;
      this.q.resume!.run(id);
      return toSuspension(row);
    });
  }

  orderCancel(o: CancelOrderRow): Promise<void> {
    return this.writer.run(() => void this.q.order!.run(o.projectId, o.acceptedBefore, o.orderedAt));
  }

  async cancelOrders(since: number): Promise<CancelOrderRow[]> {
    await this.writer.run(() => void this.q.pruneOrders!.run(since), false);
    return this.q.orders!.all(since).map((r: any) => ({ projectId: r.project_id, acceptedBefore: r.accepted_before, orderedAt: r.ordered_at }));
  }

  /**
   * Looks through the project's mail a slice at a time (reads, between which the event loop runs), and
   * cancels what is open in writes of at most CANCEL_CHUNK emails, each judged again inside its write.
   */
  async cancelProject(projectId: string, acceptedBefore: number, now: number): Promise<number> {
    let total = 0;
    let after = '';
    for (;;) {
      const rows = this.q.slice!.all(projectId, after, SCAN_SLICE) as Array<{ id: string; status: EmailStatus; created_at: number }>;
      const open = rows.filter((r) => CANCELABLE.includes(r.status) && r.created_at <= acceptedBefore).map((r) => r.id);
      for (let i = 0; i < open.length; i += CANCEL_CHUNK) {
        const ids = open.slice(i, i + CANCEL_CHUNK);
        total += await this.writer.run(() => {
          const emails = ids.flatMap((id) => {
            const r = this.q.email!.get(id) as { id: string; created_at: number } | undefined;
            return r && r.created_at <= acceptedBefore ? [toLoadedEmail(r, this.q.recipients!.all(id))] : [];
          });
          const { outcome, changes } = cancelOpen(emails, this.changes.hooksOf(projectId), now);
          this.changes.write(changes);
          return outcome;
        });
      }
      if (rows.length < SCAN_SLICE) return total;
      after = rows.at(-1)!.id;
      // Let the event loop run between slices of a long history.
      await new Promise((r) => setImmediate(r));
    }
  }
}
