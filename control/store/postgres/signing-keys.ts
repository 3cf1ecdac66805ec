// The JWT signing keys on PostgreSQL (auth/jwt), shared by every node. Creating the first key and rotating
// hold one transaction-level advisory lock: nodes starting together add one first key, and two rotations
// (or automatic rotations on several nodes) run one after the other.
import type { SigningKeyRow, SigningKeys } from '../index.js';
import type { PgDb, Tx } from './db.js';

/** Any constant the nodes agree on, apart from the migrations' lock. */
const KEYS_LOCK = 0x706773696b657973n; // "pgsikeys"

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

const insert = (tx: Tx, k: SigningKeyRow) =>
  tx.query(
    `INSERT INTO signing_keys (kid, alg, public_jwk, private_jwk, created_at, active_from, retired_at, drop_after)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [k.kid, k.alg, k.publicJwk, k.privateJwk, k.createdAt, k.activeFrom, k.retiredAt, k.dropAfter],
  );

export class PgSigningKeys implements SigningKeys {
  constructor(private readonly db: PgDb) {}

  async list(): Promise<SigningKeyRow[]> {
    return (await this.db.query('SELECT * FROM signing_keys ORDER BY created_at, kid')).rows.map(toRow);
  }

  createFirst(key: SigningKeyRow): Promise<boolean> {
    return this.db.tx(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(${KEYS_LOCK})`);
      if ((await tx.query('SELECT 1 FROM signing_keys LIMIT 1')).rows.length) return false;
      await insert(tx, key);
      return true;
    });
  }

  rotate(next: SigningKeyRow, overlapMs: number, ifNewestBefore?: number): Promise<boolean> {
    return this.db.tx(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(${KEYS_LOCK})`);
      if (ifNewestBefore !== undefined) {
        const newest = (await tx.query<{ at: number | null }>('SELECT MAX(created_at) AS at FROM signing_keys')).rows[0]?.at ?? null;
        if (newest !== null && newest >= ifNewestBefore) return false;
      }
      const at = next.activeFrom;
      await tx.query('UPDATE signing_keys SET retired_at = $1, drop_after = $2 WHERE retired_at IS NULL OR retired_at > $1', [at, at + overlapMs]);
      await insert(tx, next);
      return true;
    });
  }

  async prune(now: number): Promise<number> {
    return (await this.db.query('DELETE FROM signing_keys WHERE drop_after IS NOT NULL AND drop_after <= $1', [now])).rowCount;
  }
}
