// Passkeys (auth/passkeys) on PostgreSQL: a challenge is taken with DELETE … RETURNING (one taker on any node),
// and a use moves the counter forward in one conditional UPDATE, so two nodes cannot both accept the same count.
import type { Env, Origin, PasskeyChallengeRow, PasskeyRow, Passkeys } from '../index.js';
import type { PgDb } from './db.js';
import { toChallenge, toPasskey } from '../sqlite/passkeys.js';

export class PgPasskeys implements Passkeys {
  constructor(private readonly db: PgDb) {}

  async add(k: PasskeyRow): Promise<boolean> {
    const r = await this.db.query(
      `INSERT INTO auth_passkeys (id, project_id, env, user_id, credential_id, public_key, counter, transports, device_type, backed_up,
         backup_eligible, aaguid, name, rp_id, created_at, last_used_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
       ON CONFLICT (project_id, env, credential_id) DO NOTHING`,
      [
        k.id,
        k.projectId,
        k.env,
        k.userId,
        k.credentialId,
        Buffer.from(k.publicKey),
        k.counter,
        JSON.stringify(k.transports),
        k.deviceType,
        k.backedUp,
        k.backupEligible,
        k.aaguid,
        k.name,
        k.rpId,
        k.createdAt,
        k.lastUsedAt,
      ],
    );
    return (r.rowCount ?? 0) > 0;
  }

  async byCredentialId(projectId: string, env: Env, credentialId: string): Promise<PasskeyRow | undefined> {
    const r = (await this.db.query('SELECT * FROM auth_passkeys WHERE project_id = $1 AND env = $2 AND credential_id = $3', [projectId, env, credentialId]))
      .rows[0];
    return r ? toPasskey(r, false) : undefined;
  }

  async listForUser(projectId: string, env: Env, userId: string): Promise<PasskeyRow[]> {
    const r = await this.db.query('SELECT * FROM auth_passkeys WHERE project_id = $1 AND env = $2 AND user_id = $3 ORDER BY created_at, id', [
      projectId,
      env,
      userId,
    ]);
    return r.rows.map((x) => toPasskey(x, false));
  }

  async remove(projectId: string, env: Env, userId: string, id: string): Promise<PasskeyRow | undefined> {
    const r = (
      await this.db.query('DELETE FROM auth_passkeys WHERE project_id = $1 AND env = $2 AND user_id = $3 AND id = $4 RETURNING *', [projectId, env, userId, id])
    ).rows[0];
    return r ? toPasskey(r, false) : undefined;
  }

  async use(id: string, counter: number, backedUp: boolean, at: number): Promise<boolean> {
    const r = await this.db.query(
      `UPDATE auth_passkeys SET counter = $2, backed_up = $3, last_used_at = $4
       WHERE id = $1 AND (counter < $2 OR (counter = 0 AND $2 = 0))`,
      [id, counter, backedUp, at],
    );
    return (r.rowCount ?? 0) > 0;
  }

  async putChallenge(c: PasskeyChallengeRow): Promise<void> {
    await this.db.query(
      `INSERT INTO auth_passkey_challenges (challenge_hash, project_id, env, user_id, purpose, rp_id, origin, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [c.challengeHash, c.projectId, c.env, c.userId, c.purpose, c.rpId, c.origin, c.expiresAt],
    );
  }

  async takeChallenge(challengeHash: string): Promise<PasskeyChallengeRow | undefined> {
    const r = (await this.db.query('DELETE FROM auth_passkey_challenges WHERE challenge_hash = $1 RETURNING *', [challengeHash])).rows[0];
    return r ? toChallenge(r) : undefined;
  }

  async insertExchange(
    x: { codeHash: string; expiresAt: number; clientChallenge: string | null; secondFactor: boolean },
    projectId: string,
    env: Env,
    userId: string,
    provider: string,
    origin: Origin,
  ): Promise<boolean> {
    // One statement: the row is written only when the user is the project's and environment's.
    const r = await this.db.query(
      `INSERT INTO auth_exchange_codes (code_hash, project_id, env, user_id, provider, ip, user_agent, expires_at, client_challenge, second_factor)
       SELECT $1::text, project_id, env, id, $5::text, $6::text, $7::text, $8::bigint, $9::text, $10::boolean FROM auth_users WHERE id = $4 AND project_id = $2 AND env = $3`,
      [x.codeHash, projectId, env, userId, provider, origin.ip, origin.userAgent, x.expiresAt, x.clientChallenge, x.secondFactor],
    );
    return (r.rowCount ?? 0) > 0;
  }

  async prune(now: number): Promise<void> {
    await this.db.query('DELETE FROM auth_passkey_challenges WHERE expires_at < $1', [now]);
  }
}
