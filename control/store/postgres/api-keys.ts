// API keys on PostgreSQL: only their hashes are kept.
import type { ApiKeyRow, ApiKeys, NewApiKey } from '../index.js';
import type { PgDb } from './db.js';
import { toKey } from './rows.js';

export class PgApiKeys implements ApiKeys {
  constructor(private readonly db: PgDb) {}

  async create(k: NewApiKey): Promise<void> {
    await this.db.query('INSERT INTO api_keys (id, project_id, kind, scope, hash, hint, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
      k.id,
      k.projectId,
      k.kind,
      k.scope,
      k.hash,
      k.hint,
      k.createdAt,
    ]);
  }

  async byHash(hash: string): Promise<ApiKeyRow | undefined> {
    const r = (await this.db.query('SELECT * FROM api_keys WHERE hash = $1', [hash])).rows[0];
    return r ? toKey(r) : undefined;
  }

  async list(projectId: string): Promise<ApiKeyRow[]> {
    return (await this.db.query('SELECT * FROM api_keys WHERE project_id = $1 ORDER BY created_at, id', [projectId])).rows.map(toKey);
  }

  async revoke(projectId: string, keyId: string, at: number): Promise<{ hash: string } | undefined> {
    const r = await this.db.query<{ hash: string }>(
      'UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND project_id = $3 AND revoked_at IS NULL RETURNING hash',
      [at, keyId, projectId],
    );
    return r.rows[0] ? { hash: r.rows[0].hash } : undefined;
  }
}
