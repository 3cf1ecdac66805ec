// Idempotency keys in SQLite: each claim reads and writes its row inside one writer call
// (one savepoint on the one connection), so of concurrent claims exactly one wins.
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import type { IdempotencyClaim, IdempotencyKeys, IdempotencyRequest } from '../index.js';
import { judgeClaim, type IdempotencyRow } from '../idempotency.js';

export class SqliteIdempotency implements IdempotencyKeys {
  private readonly q;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
  ) {
    this.q = {
      get: db.prepare('SELECT request_hash, email_ids, status, body, expires_at, lease_until FROM idempotency_keys WHERE project_id = ? AND key = ?'),
      put: db.prepare(`INSERT OR REPLACE INTO idempotency_keys (project_id, key, request_hash, email_ids, status, body, created_at, expires_at, lease_until)
        VALUES (@projectId, @key, @requestHash, @emailIds, NULL, NULL, @now, @expiresAt, @leaseUntil)`),
      lease: db.prepare('UPDATE idempotency_keys SET lease_until = ? WHERE project_id = ? AND key = ?'),
      complete: db.prepare('UPDATE idempotency_keys SET status = ?, body = ? WHERE project_id = ? AND key = ? AND status IS NULL'),
      abandon: db.prepare('UPDATE idempotency_keys SET lease_until = 0 WHERE project_id = ? AND key = ? AND status IS NULL AND lease_until = ?'),
      prune: db.prepare('DELETE FROM idempotency_keys WHERE expires_at <= ?'),
    };
  }

  claim(r: IdempotencyRequest): Promise<IdempotencyClaim> {
    return this.writer.run((): IdempotencyClaim => {
      const x = this.q.get.get(r.projectId, r.key) as any;
      const row: IdempotencyRow | undefined = x && {
        requestHash: x.request_hash,
        emailIds: JSON.parse(x.email_ids),
        status: x.status,
        body: x.body,
        expiresAt: x.expires_at,
        leaseUntil: x.lease_until,
      };
      const step = judgeClaim(row, r);
      if (step.kind === 'insert') {
        this.q.put.run({ ...r, emailIds: JSON.stringify(r.emailIds) });
        return { kind: 'new', emailIds: r.emailIds };
      }
      if (step.kind === 'take-over') {
        this.q.lease.run(r.leaseUntil, r.projectId, r.key);
        return { kind: 'resumed', emailIds: step.emailIds };
      }
      return step;
    });
  }

  complete(projectId: string, key: string, status: number, body: string): Promise<void> {
    return this.writer.run(() => void this.q.complete.run(status, body, projectId, key));
  }

  abandon(projectId: string, key: string, leaseUntil: number): Promise<void> {
    return this.writer.run(() => void this.q.abandon.run(projectId, key, leaseUntil));
  }

  prune(now: number): Promise<number> {
    return this.writer.run(() => this.q.prune.run(now).changes);
  }
}
