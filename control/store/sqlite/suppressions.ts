// Suppressions (bounces, complaints, unsubscribes) in SQLite.
import type Database from 'better-sqlite3';
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import { unsubscribe } from '../../mail/lifecycle.js';
import type { FoundSuppression, SuppressionRow, SuppressionSearch, Suppressions } from '../index.js';
import { likePattern } from '../rows.js';
import type { SqliteChanges } from './changes.js';

export class SqliteSuppressions implements Suppressions {
  private readonly q;

  constructor(
    private readonly db: Db,
    private readonly writer: GroupWriter,
    private readonly changes: SqliteChanges,
  ) {
    this.q = {
      list: db.prepare('SELECT address, reason, scope, email_id, created_at FROM suppressions WHERE project_id = ? ORDER BY created_at, address'),
      remove: db.prepare('DELETE FROM suppressions WHERE project_id = ? AND address = ?'),
    };
  }

  async list(projectId: string): Promise<SuppressionRow[]> {
    return this.q.list.all(projectId).map((r: any) => ({ address: r.address, reason: r.reason, scope: r.scope, emailId: r.email_id, createdAt: r.created_at }));
  }

  /** Newest first over suppressions_created or suppressions_project_created (migration 0017); `q` filters as it goes. */
  async search(s: SuppressionSearch): Promise<{ rows: FoundSuppression[]; hasMore: boolean }> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (s.projectId !== undefined) {
      where.push('project_id = ?');
      params.push(s.projectId);
    }
    if (s.q) {
      where.push("address LIKE ? ESCAPE '\\'");
      params.push(likePattern(s.q));
    }
    if (s.after) {
      where.push('(created_at, project_id, address) < (?, ?, ?)');
      params.push(s.after.createdAt, s.after.projectId, s.after.address);
    }
    const sql = `SELECT project_id, address, reason, scope, email_id, created_at FROM suppressions${where.length ? ` WHERE ${where.join(' AND ')}` : ''}
      ORDER BY created_at DESC, project_id DESC, address DESC LIMIT ?`;
    const rows = this.statement(sql).all(...params, s.limit + 1);
    return {
      hasMore: rows.length > s.limit,
      rows: rows
        .slice(0, s.limit)
        .map((r: any) => ({ projectId: r.project_id, address: r.address, reason: r.reason, scope: r.scope, emailId: r.email_id, createdAt: r.created_at })),
    };
  }

  /** The few shapes of search, each prepared once. */
  private readonly searches = new Map<string, Database.Statement<unknown[]>>();
  private statement(sql: string): Database.Statement<unknown[]> {
    let st = this.searches.get(sql);
    if (!st) this.searches.set(sql, (st = this.db.prepare<unknown[]>(sql)));
    return st;
  }

  remove(projectId: string, address: string): Promise<boolean> {
    return this.writer.run(() => this.q.remove.run(projectId, address).changes > 0);
  }

  unsubscribe(projectId: string, emailId: string, address: string, source: string, at: number): Promise<void> {
    return this.writer.run(() => this.changes.write(unsubscribe({ projectId, emailId, address, source, at })));
  }
}
