// The auth audit log in SQLite: an entry and its webhook messages in one write.
import type Database from 'better-sqlite3';
import { prefixedId } from '../../../core/ids.js';
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import { authEventPayload, wantsAuthEvent } from '../../webhooks/payload.js';
import type { ActivityRow, AuditEntry, AuditLog, AuditQuery } from '../index.js';
import { toAudit } from '../rows.js';
import { toWebhook } from './rows.js';

type Statement = Database.Statement<unknown[]>;

export class SqliteAudit implements AuditLog {
  private readonly q;

  constructor(
    private readonly db: Db,
    private readonly writer: GroupWriter,
  ) {
    this.q = {
      insert:
        db.prepare(`INSERT INTO auth_audit (id, project_id, env, type, user_id, session_id, email, phone, provider, ip, user_agent, reason, suppressed, at)
        VALUES (@id, @projectId, @env, @type, @userId, @sessionId, @email, @phone, @provider, @ip, @userAgent, @reason, @suppressed, @at)`),
      webhooks: db.prepare('SELECT * FROM webhooks WHERE project_id = ? ORDER BY created_at, id'),
      insertDelivery: db.prepare(`INSERT INTO webhook_deliveries (id, webhook_id, project_id, payload, attempt, next_attempt_at, status, created_at)
        VALUES (?, ?, ?, ?, 0, ?, 'pending', ?)`),
      cursor: db.prepare('SELECT seq FROM auth_audit WHERE id = ? AND project_id = ?').pluck(),
      prune: db.prepare('DELETE FROM auth_audit WHERE at < ?'),
      // By auth_audit_project_at (migration 0017): only the project's entries of the period are read. Bound numbers are
      // REAL in better-sqlite3: the CAST makes the bucket a whole number.
      activity: db.prepare(`SELECT CAST((at - @from) / @step AS INTEGER) AS bucket, provider,
          SUM(CASE WHEN type = 'session.created' THEN 1 ELSE 0 END) AS signed_in,
          SUM(CASE WHEN type = 'sign_in.failed' THEN 1 + suppressed ELSE 0 END) AS failed
        FROM auth_audit WHERE project_id = @projectId AND at >= @from AND at < @to AND type IN ('session.created', 'sign_in.failed')
        GROUP BY bucket, provider`),
    };
  }

  record(entry: AuditEntry, data: Record<string, unknown>): Promise<void> {
    return this.writer.run(() => {
      this.q.insert.run(entry);
      const hooks = this.q.webhooks
        .all(entry.projectId)
        .map(toWebhook)
        .filter((w) => wantsAuthEvent(w, entry.type));
      if (!hooks.length) return;
      const payload = authEventPayload(entry.type, entry.at, data);
      for (const w of hooks) this.q.insertDelivery.run(prefixedId('msg'), w.id, entry.projectId, payload, entry.at, entry.at);
    });
  }

  async list(projectId: string, q: AuditQuery): Promise<{ entries: AuditEntry[]; hasMore: boolean } | undefined> {
    const cursorId = q.after ?? q.before;
    let seq: number | undefined;
    if (cursorId !== undefined) {
      seq = this.q.cursor.get(cursorId, projectId) as number | undefined;
      if (seq === undefined) return undefined;
    }
    const where = ['project_id = ?'];
    const params: unknown[] = [projectId];
    if (q.type) {
      where.push('type = ?');
      params.push(q.type);
    }
    // `before` reads towards newer entries (ascending), then turns the page round.
    const newer = q.before !== undefined;
    if (seq !== undefined) {
      where.push(newer ? 'seq > ?' : 'seq < ?');
      params.push(seq);
    }
    const rows = this.statement(`SELECT * FROM auth_audit WHERE ${where.join(' AND ')} ORDER BY seq ${newer ? 'ASC' : 'DESC'} LIMIT ?`).all(
      ...params,
      q.limit + 1,
    );
    const hasMore = rows.length > q.limit;
    const page = rows.slice(0, q.limit).map(toAudit);
    return { entries: newer ? page.reverse() : page, hasMore };
  }

  /** The few shapes of page query, each prepared once. */
  private readonly pages = new Map<string, Statement>();
  private statement(sql: string): Statement {
    let st = this.pages.get(sql);
    if (!st) this.pages.set(sql, (st = this.db.prepare<unknown[]>(sql)));
    return st;
  }

  async activity(projectId: string, from: number, to: number, stepMs: number): Promise<ActivityRow[]> {
    return (this.q.activity.all({ projectId, from, to, step: stepMs }) as any[]).map((r) => ({
      bucket: r.bucket,
      provider: r.provider,
      signedIn: r.signed_in,
      failed: r.failed,
    }));
  }

  prune(before: number): Promise<number> {
    return this.writer.run(() => this.q.prune.run(before).changes);
  }
}
