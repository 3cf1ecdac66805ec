// Suppressions (bounces, complaints, unsubscribes) in SQLite.
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import { unsubscribe } from '../../mail/lifecycle.js';
import type { SuppressionRow, Suppressions } from '../index.js';
import type { SqliteChanges } from './changes.js';

export class SqliteSuppressions implements Suppressions {
  private readonly q;

  constructor(
    db: Db,
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

  remove(projectId: string, address: string): Promise<boolean> {
    return this.writer.run(() => this.q.remove.run(projectId, address).changes > 0);
  }

  unsubscribe(projectId: string, emailId: string, address: string, source: string, at: number): Promise<void> {
    return this.writer.run(() => this.changes.write(unsubscribe({ projectId, emailId, address, source, at })));
  }
}
