// Suppressions (bounces, complaints, unsubscribes) on PostgreSQL.
import type { SuppressionRow, Suppressions } from '../index.js';
import type { PgDb } from './db.js';

export class PgSuppressions implements Suppressions {
  constructor(private readonly db: PgDb) {}

  async list(projectId: string): Promise<SuppressionRow[]> {
    const r = await this.db.query('SELECT address, reason, scope, email_id, created_at FROM suppressions WHERE project_id = $1 ORDER BY created_at, address', [
      projectId,
    ]);
    return r.rows.map((x: any) => ({ address: x.address, reason: x.reason, scope: x.scope, emailId: x.email_id, createdAt: x.created_at }));
  }

  async remove(projectId: string, address: string): Promise<boolean> {
    return (await this.db.query('DELETE FROM suppressions WHERE project_id = $1 AND address = $2', [projectId, address])).rowCount > 0;
  }

  unsubscribe(projectId: string, emailId: string, address: string, source: string, at: number): Promise<void> {
    return this.db.tx(async (tx) => {
      await tx.query(
        `INSERT INTO suppressions (project_id, address, reason, scope, email_id, created_at) VALUES ($1, $2, 'unsubscribed', 'bulk', $3, $4)
         ON CONFLICT (project_id, address) DO NOTHING`,
        [projectId, address, emailId, at],
      );
      await tx.query(
        `INSERT INTO email_events (email_id, type, recipient, attempt, at, details, dedupe) VALUES ($1, 'unsubscribed', $2, 0, $3, $4, '')
         ON CONFLICT DO NOTHING`,
        [emailId, address, at, JSON.stringify({ source })],
      );
    });
  }
}
