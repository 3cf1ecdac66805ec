// The JWT signing keys in SQLite (auth/jwt). Creating the first key and rotating read and write inside one
// writer call (one savepoint on the one connection), so two callers never both add a first key.
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import type { SigningKeyRow, SigningKeys } from '../index.js';

const toRow = (r: any): SigningKeyRow => ({
  kid: r.kid,
  alg: r.alg,
  publicJwk: r.public_jwk,
  privateJwk: r.private_jwk,
  createdAt: r.created_at,
  activeFrom: r.active_from,
  retiredAt: r.retired_at,
  dropAfter: r.drop_after,
});

export class SqliteSigningKeys implements SigningKeys {
  private readonly q;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
  ) {
    this.q = {
      list: db.prepare('SELECT * FROM signing_keys ORDER BY created_at, kid'),
      any: db.prepare('SELECT 1 FROM signing_keys LIMIT 1').pluck(),
      newest: db.prepare('SELECT MAX(created_at) FROM signing_keys').pluck(),
      insert: db.prepare(`INSERT INTO signing_keys (kid, alg, public_jwk, private_jwk, created_at, active_from, retired_at, drop_after)
        VALUES (@kid, @alg, @publicJwk, @privateJwk, @createdAt, @activeFrom, @retiredAt, @dropAfter)`),
      retire: db.prepare('UPDATE signing_keys SET retired_at = ?, drop_after = ? WHERE retired_at IS NULL OR retired_at > ?'),
      prune: db.prepare('DELETE FROM signing_keys WHERE drop_after IS NOT NULL AND drop_after <= ?'),
    };
  }

  async list(): Promise<SigningKeyRow[]> {
    return this.q.list.all().map(toRow);
  }

  createFirst(key: SigningKeyRow): Promise<boolean> {
    return this.writer.run(() => {
      if (this.q.any.get()) return false;
      this.q.insert.run(key);
      return true;
    });
  }

  rotate(next: SigningKeyRow, overlapMs: number, ifNewestBefore?: number): Promise<boolean> {
    return this.writer.run(() => {
      if (ifNewestBefore !== undefined) {
        const newest = this.q.newest.get() as number | null;
        if (newest !== null && newest >= ifNewestBefore) return false;
      }
      const at = next.activeFrom;
      this.q.retire.run(at, at + overlapMs, at);
      this.q.insert.run(next);
      return true;
    });
  }

  prune(now: number): Promise<number> {
    return this.writer.run(() => this.q.prune.run(now).changes);
  }
}
