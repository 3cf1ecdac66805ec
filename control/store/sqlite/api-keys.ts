// API keys in SQLite: only their hashes are kept.
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import type { ApiKeyRow, ApiKeys, NewApiKey } from '../index.js';
import { toKey } from './rows.js';

export class SqliteApiKeys implements ApiKeys {
  private readonly q;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
  ) {
    this.q = {
      insert: db.prepare(
        'INSERT INTO api_keys (id, project_id, kind, scope, hash, hint, created_at) VALUES (@id, @projectId, @kind, @scope, @hash, @hint, @createdAt)',
      ),
      byHash: db.prepare('SELECT * FROM api_keys WHERE hash = ?'),
      list: db.prepare('SELECT * FROM api_keys WHERE project_id = ? ORDER BY created_at, id'),
      revoke: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND project_id = ? AND revoked_at IS NULL'),
      hashOf: db.prepare('SELECT hash FROM api_keys WHERE id = ? AND project_id = ?').pluck(),
    };
  }

  create(k: NewApiKey): Promise<void> {
    return this.writer.run(() => void this.q.insert.run(k));
  }

  async byHash(hash: string): Promise<ApiKeyRow | undefined> {
    const r = this.q.byHash.get(hash);
    return r ? toKey(r) : undefined;
  }

  async list(projectId: string): Promise<ApiKeyRow[]> {
    return this.q.list.all(projectId).map(toKey);
  }

  revoke(projectId: string, keyId: string, at: number): Promise<{ hash: string } | undefined> {
    return this.writer.run(() => {
      if (!this.q.revoke.run(at, keyId, projectId).changes) return undefined;
      return { hash: this.q.hashOf.get(keyId, projectId) as string };
    });
  }
}
