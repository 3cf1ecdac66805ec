// Suppressions (bounces, complaints, unsubscribes) on PostgreSQL.
import { unsubscribe } from '../../mail/lifecycle.js';
import type { SuppressionRow, Suppressions } from '../index.js';
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

  async remove(projectId: string, address: string): Promise<boolean> {
    return (await this.db.query('DELETE FROM suppressions WHERE project_id = $1 AND address = $2', [projectId, address])).rowCount > 0;
  }

  unsubscribe(projectId: string, emailId: string, address: string, source: string, at: number): Promise<void> {
    return this.db.tx((tx) => writeChanges(tx, unsubscribe({ projectId, emailId, address, source, at })));
  }
}
