// The auth audit log on PostgreSQL: an entry and its webhook messages in one transaction.
import { prefixedId } from '../../../core/ids.js';
import { authEventPayload, wantsAuthEvent } from '../../webhooks/payload.js';
import type { ActivityRow, AuditEntry, AuditLog, AuditQuery } from '../index.js';
import { toAudit } from '../rows.js';
import type { PgDb } from './db.js';
import { toWebhook } from './rows.js';

export class PgAudit implements AuditLog {
  constructor(private readonly db: PgDb) {}

  record(e: AuditEntry, data: Record<string, unknown>): Promise<void> {
    return this.db.tx(async (tx) => {
      await tx.query(
        `INSERT INTO auth_audit (id, project_id, env, type, user_id, session_id, email, phone, provider, ip, user_agent, reason, suppressed, at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
        [e.id, e.projectId, e.env, e.type, e.userId, e.sessionId, e.email, e.phone, e.provider, e.ip, e.userAgent, e.reason, e.suppressed, e.at],
      );
      // Read here, not from the mail fanout's cache: sign-in events are few, and this sees the latest endpoints.
      const hooks = (await tx.query('SELECT * FROM webhooks WHERE project_id = $1 ORDER BY created_at, id', [e.projectId])).rows
        .map(toWebhook)
        .filter((w) => wantsAuthEvent(w, e.type));
      if (!hooks.length) return;
      const payload = authEventPayload(e.type, e.at, data);
      await tx.query(
        `INSERT INTO webhook_deliveries (id, webhook_id, project_id, payload, attempt, next_attempt_at, status, created_at)
         SELECT id, w, $2, $3, 0, $4, 'pending', $4 FROM unnest($1::text[], $5::text[]) AS x(id, w)`,
        [hooks.map(() => prefixedId('msg')), e.projectId, payload, e.at, hooks.map((w) => w.id)],
      );
    });
  }

  async list(projectId: string, q: AuditQuery): Promise<{ entries: AuditEntry[]; hasMore: boolean } | undefined> {
    const cursorId = q.after ?? q.before;
    let seq: number | undefined;
    if (cursorId !== undefined) {
      seq = (await this.db.query<{ seq: number }>('SELECT seq FROM auth_audit WHERE id = $1 AND project_id = $2', [cursorId, projectId])).rows[0]?.seq;
      if (seq === undefined) return undefined;
    }
    const params: unknown[] = [projectId];
    const where = ['project_id = $1'];
    if (q.type) where.push(`type = $${params.push(q.type)}`);
    // `before` reads towards newer entries (ascending), then turns the page round.
    const newer = q.before !== undefined;
    if (seq !== undefined) where.push(`seq ${newer ? '>' : '<'} $${params.push(seq)}`);
    const rows = (
      await this.db.query(
        `SELECT * FROM auth_audit WHERE ${where.join(' AND ')} ORDER BY seq ${newer ? 'ASC' : 'DESC'} LIMIT $${params.push(q.limit + 1)}`,
        params,
      )
    ).rows;
    const hasMore = rows.length > q.limit;
    const page = rows.slice(0, q.limit).map(toAudit);
    return { entries: newer ? page.reverse() : page, hasMore };
  }

  /** By auth_audit_project_at (migration 0017): only the project's entries of the period are read. */
  async activity(projectId: string, from: number, to: number, stepMs: number): Promise<ActivityRow[]> {
    const r = await this.db.query(
      `SELECT (at - $2) / $4 AS bucket, provider,
         SUM(CASE WHEN type = 'session.created' THEN 1 ELSE 0 END) AS signed_in,
         SUM(CASE WHEN type = 'sign_in.failed' THEN 1 + suppressed ELSE 0 END) AS failed
       FROM auth_audit WHERE project_id = $1 AND at >= $2 AND at < $3 AND type IN ('session.created', 'sign_in.failed')
       GROUP BY bucket, provider`,
      [projectId, from, to, stepMs],
    );
    return r.rows.map((x: any) => ({ bucket: Number(x.bucket), provider: x.provider, signedIn: Number(x.signed_in), failed: Number(x.failed) }));
  }

  async prune(before: number): Promise<number> {
    return (await this.db.query('DELETE FROM auth_audit WHERE at < $1', [before])).rowCount;
  }
}
