// Suppressions (bounces, complaints, unsubscribes) on PostgreSQL.
import { unsubscribe } from '../../mail/lifecycle.js';
import type { FoundSuppression, SuppressionRow, SuppressionSearch, Suppressions } from '../index.js';
import { likePattern } from '../rows.js';
import { writeChanges } from './changes.js';
import type { PgDb } from './db.js';

export class PgSuppressions implements Suppressions {
  constructor(private readonly db: PgDb) {}

  async list(projectId: string): Promise<SuppressionRow[]> {
    const r = await this.db.query('SELECT address, reason, scope, email_id, created_at FROM suppressions WHERE project_id = $1 ORDER BY created_at, address', [
      projectId,
    ]);
    return r.rows.map((x: any) => ({ address: x.address, reason: x.reason, scope: x.scope, emailId: x.email_id, createdAt: x.created_at }));
  }

  /** Newest first over suppressions_created or suppressions_project_created (migration 0017); `q` filters as it goes. */
  async search(s: SuppressionSearch): Promise<{ rows: FoundSuppression[]; hasMore: boolean }> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (s.projectId !== undefined) where.push(`project_id = $${params.push(s.projectId)}`);
    if (s.q) where.push(`address ILIKE $${params.push(likePattern(s.q))} ESCAPE '\\'`);
    if (s.after) {
      where.push(
        `(created_at, project_id, address) < ($${params.push(s.after.createdAt)}, $${params.push(s.after.projectId)}, $${params.push(s.after.address)})`,
      );
    }
    const r = await this.db.query(
      `SELECT project_id, address, reason, scope, email_id, created_at FROM suppressions${where.length ? ` WHERE ${where.join(' AND ')}` : ''}
       ORDER BY created_at DESC, project_id DESC, address DESC LIMIT $${params.push(s.limit + 1)}`,
      params,
    );
    return {
      hasMore: r.rows.length > s.limit,
      rows: r.rows
        .slice(0, s.limit)
        .map((x: any) => ({ projectId: x.project_id, address: x.address, reason: x.reason, scope: x.scope, emailId: x.email_id, createdAt: x.created_at })),
    };
  }

  async remove(projectId: string, address: string): Promise<boolean> {
    return (await this.db.query('DELETE FROM suppressions WHERE project_id = $1 AND address = $2', [projectId, address])).rowCount > 0;
  }

  unsubscribe(projectId: string, emailId: string, address: string, source: string, at: number): Promise<void> {
    return this.db.tx((tx) => writeChanges(tx, unsubscribe({ projectId, emailId, address, source, at })));
  }
}
