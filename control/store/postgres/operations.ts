// Queue control on PostgreSQL: the operator audit log, suspensions, cancel orders, and a project's
// cancel, a chunk of its open mail per short transaction (rows locked in id order, as the delivery
// log locks them, so a cancel and a run of events take turns per email and never deadlock).
import { CANCEL_CHUNK, CANCELABLE, cancelOpen } from '../../mail/lifecycle.js';
import type { CancelOrderRow, OperatorAuditEntry, OperatorAuditQuery, Operations, SuspensionRow } from '../index.js';
import { hooksOf, type WebhookCache, writeChanges } from './changes.js';
import type { PgDb } from './db.js';
import { LOADED_COLUMNS, withRecipients } from './rows.js';

const toEntry = (r: any): OperatorAuditEntry => ({
  id: r.id,
  at: Number(r.at),
  action: r.action,
  actor: r.actor,
  target: r.target,
  details: r.details,
  emails: r.emails,
});

const toSuspension = (r: any): SuspensionRow => ({
  id: r.id,
  provider: r.provider,
  projectId: r.project_id,
  until: r.until_at === null ? null : Number(r.until_at),
  reason: r.reason,
  createdAt: Number(r.created_at),
});

const OPEN = CANCELABLE.map((s) => `'${s}'`).join(', ');

export class PgOperations implements Operations {
  constructor(
    private readonly db: PgDb,
    private readonly hooks: WebhookCache,
  ) {}

  async audit(e: OperatorAuditEntry): Promise<void> {
    await this.db.query('INSERT INTO operator_audit (id, at, action, actor, target, details, emails) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
      e.id,
      e.at,
      e.action,
      e.actor,
      e.target,
      JSON.stringify(e.details),
      e.emails,
    ]);
  }

  async auditLog(q: OperatorAuditQuery): Promise<{ entries: OperatorAuditEntry[]; hasMore: boolean } | undefined> {
    let rows: unknown[];
    if (q.before !== undefined) {
      const seq = (await this.db.query<{ seq: string }>('SELECT seq FROM operator_audit WHERE id = $1', [q.before])).rows[0]?.seq;
      if (seq === undefined) return undefined;
      rows = (await this.db.query('SELECT * FROM operator_audit WHERE seq < $1 ORDER BY seq DESC LIMIT $2', [seq, q.limit + 1])).rows;
    } else rows = (await this.db.query('SELECT * FROM operator_audit ORDER BY seq DESC LIMIT $1', [q.limit + 1])).rows;
    return { entries: rows.slice(0, q.limit).map(toEntry), hasMore: rows.length > q.limit };
  }

  async suspend(s: SuspensionRow): Promise<void> {
    await this.db.query('INSERT INTO queue_suspensions (id, provider, project_id, until_at, reason, created_at) VALUES ($1, $2, $3, $4, $5, $6)', [
      s.id,
      s.provider,
      s.projectId,
      s.until,
      s.reason,
      s.createdAt,
    ]);
  }

  async suspensions(now: number): Promise<SuspensionRow[]> {
    const r = await this.db.query('SELECT * FROM queue_suspensions WHERE until_at IS NULL OR until_at > $1 ORDER BY created_at, id', [now]);
    return r.rows.map(toSuspension);
  }

  async resume(id: string): Promise<SuspensionRow | undefined> {
    const r = await this.db.query('DELETE FROM queue_suspensions WHERE id = $1 RETURNING *', [id]);
    return r.rows[0] ? toSuspension(r.rows[0]) : undefined;
  }

  async orderCancel(o: CancelOrderRow): Promise<void> {
    await this.db.query('INSERT INTO cancel_orders (project_id, accepted_before, ordered_at) VALUES ($1, $2, $3)', [
      o.projectId,
      o.acceptedBefore,
      o.orderedAt,
    ]);
  }

  async cancelOrders(since: number): Promise<CancelOrderRow[]> {
    await this.db.query('DELETE FROM cancel_orders WHERE ordered_at < $1', [since]);
    const r = await this.db.query('SELECT * FROM cancel_orders WHERE ordered_at >= $1 ORDER BY ordered_at', [since]);
    return r.rows.map((x: any) => ({ projectId: x.project_id, acceptedBefore: Number(x.accepted_before), orderedAt: Number(x.ordered_at) }));
  }

  async cancelProject(projectId: string, acceptedBefore: number, now: number): Promise<number> {
    let total = 0;
    let after = '';
    for (;;) {
      const { n, last, more } = await this.db.tx(async (tx) => {
        // SKIP nothing: an email another transaction holds (its events being applied) is waited for. The
        // server looks through the project's mail by emails_project_id; only the rows it returns are locked.
        const locked = await tx.query<{ id: string }>(
          `SELECT ${LOADED_COLUMNS} FROM emails
           WHERE project_id = $1 AND status IN (${OPEN}) AND id > $2 AND created_at <= $3 ORDER BY id LIMIT $4 FOR UPDATE`,
          [projectId, after, acceptedBefore, CANCEL_CHUNK],
        );
        const emails = await withRecipients(tx, locked.rows);
        const hooks = await hooksOf(tx, this.hooks, [projectId]);
        const { outcome, changes } = cancelOpen(emails, hooks.get(projectId)!, now);
        await writeChanges(tx, changes);
        return { n: outcome, last: emails.at(-1)?.id, more: emails.length === CANCEL_CHUNK };
      }, CANCEL_CHUNK);
      total += n;
      if (!more || last === undefined) return total;
      after = last;
    }
  }
}
