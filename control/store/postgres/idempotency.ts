// Idempotency keys on PostgreSQL, shared by every control node. A claim is one short
// transaction: an upsert that only overwrites an expired row, then the live row read
// FOR UPDATE, so of claims racing from any nodes exactly one gets the key (the others
// wait on the row and then see it taken).
import type { IdempotencyClaim, IdempotencyKeys, IdempotencyRequest } from '../index.js';
import { judgeClaim } from '../idempotency.js';
import type { PgDb } from './db.js';

export class PgIdempotency implements IdempotencyKeys {
  constructor(private readonly db: PgDb) {}

  claim(r: IdempotencyRequest): Promise<IdempotencyClaim> {
    return this.db.tx(async (tx): Promise<IdempotencyClaim> => {
      for (;;) {
        const put = await tx.query(
          `INSERT INTO idempotency_keys (project_id, key, request_hash, email_ids, status, body, created_at, expires_at, lease_until)
           VALUES ($1, $2, $3, $4, NULL, NULL, $5, $6, $7)
           ON CONFLICT (project_id, key) DO UPDATE SET request_hash = excluded.request_hash, email_ids = excluded.email_ids, status = NULL,
             body = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at, lease_until = excluded.lease_until
           WHERE idempotency_keys.expires_at <= $5`,
          [r.projectId, r.key, r.requestHash, JSON.stringify(r.emailIds), r.now, r.expiresAt, r.leaseUntil],
        );
        if (put.rowCount > 0) return { kind: 'new', emailIds: r.emailIds };
        const x = (
          await tx.query(
            'SELECT request_hash, email_ids, status, body, expires_at, lease_until FROM idempotency_keys WHERE project_id = $1 AND key = $2 FOR UPDATE',
            [r.projectId, r.key],
          )
        ).rows[0];
        // Pruned between the two statements: claim it again.
        if (!x) continue;
        const step = judgeClaim(
          { requestHash: x.request_hash, emailIds: x.email_ids, status: x.status, body: x.body, expiresAt: x.expires_at, leaseUntil: x.lease_until },
          r,
        );
        if (step.kind === 'insert') continue;
        if (step.kind === 'take-over') {
          await tx.query('UPDATE idempotency_keys SET lease_until = $3 WHERE project_id = $1 AND key = $2', [r.projectId, r.key, r.leaseUntil]);
          return { kind: 'resumed', emailIds: step.emailIds };
        }
        return step;
      }
    });
  }

  async complete(projectId: string, key: string, status: number, body: string): Promise<void> {
    await this.db.query('UPDATE idempotency_keys SET status = $3, body = $4 WHERE project_id = $1 AND key = $2 AND status IS NULL', [
      projectId,
      key,
      status,
      body,
    ]);
  }

  async abandon(projectId: string, key: string, leaseUntil: number): Promise<void> {
    await this.db.query('UPDATE idempotency_keys SET lease_until = 0 WHERE project_id = $1 AND key = $2 AND status IS NULL AND lease_until = $3', [
      projectId,
      key,
      leaseUntil,
    ]);
  }

  async prune(now: number): Promise<number> {
    return (await this.db.query('DELETE FROM idempotency_keys WHERE expires_at <= $1', [now])).rowCount;
  }
}
