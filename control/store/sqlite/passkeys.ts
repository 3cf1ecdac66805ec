// Passkeys (auth/passkeys) in SQLite: credentials and the ceremonies' single-use challenges. Each change runs
// in the one writer, so a challenge is taken once and a counter moves forward once against any racer.
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import type { Env, Origin, PasskeyChallengeRow, PasskeyRow, Passkeys } from '../index.js';

/** A row as the driver gives it (better-sqlite3, or pg: JSONB parsed, BIGINT as number). */
type Raw = any;

export const toPasskey = (r: Raw, json: boolean): PasskeyRow => ({
  id: r.id,
  projectId: r.project_id,
  env: r.env,
  userId: r.user_id,
  credentialId: r.credential_id,
  publicKey: new Uint8Array(r.public_key),
  counter: Number(r.counter),
  transports: json ? JSON.parse(r.transports) : r.transports,
  deviceType: r.device_type,
  backedUp: Boolean(r.backed_up),
  backupEligible: Boolean(r.backup_eligible),
  aaguid: r.aaguid,
  name: r.name,
  rpId: r.rp_id,
  createdAt: Number(r.created_at),
  lastUsedAt: r.last_used_at === null ? null : Number(r.last_used_at),
});

export const toChallenge = (r: Raw): PasskeyChallengeRow => ({
  challengeHash: r.challenge_hash,
  projectId: r.project_id,
  env: r.env,
  userId: r.user_id,
  purpose: r.purpose,
  rpId: r.rp_id,
  origin: r.origin,
  expiresAt: Number(r.expires_at),
});

export class SqlitePasskeys implements Passkeys {
  private readonly q;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
  ) {
    const p = (sql: string) => db.prepare(sql);
    this.q = {
      add: p(`INSERT INTO auth_passkeys (id, project_id, env, user_id, credential_id, public_key, counter, transports, device_type, backed_up,
          backup_eligible, aaguid, name, rp_id, created_at, last_used_at)
        VALUES (@id, @projectId, @env, @userId, @credentialId, @publicKey, @counter, @transports, @deviceType, @backedUp,
          @backupEligible, @aaguid, @name, @rpId, @createdAt, @lastUsedAt)
        ON CONFLICT (project_id, env, credential_id) DO NOTHING`),
      byCredential: p('SELECT * FROM auth_passkeys WHERE project_id = ? AND env = ? AND credential_id = ?'),
      forUser: p('SELECT * FROM auth_passkeys WHERE project_id = ? AND env = ? AND user_id = ? ORDER BY created_at, id'),
      remove: p('DELETE FROM auth_passkeys WHERE project_id = ? AND env = ? AND user_id = ? AND id = ? RETURNING *'),
      use: p(`UPDATE auth_passkeys SET counter = @counter, backed_up = @backedUp, last_used_at = @at
        WHERE id = @id AND (counter < @counter OR (counter = 0 AND @counter = 0))`),
      putChallenge: p(`INSERT INTO auth_passkey_challenges (challenge_hash, project_id, env, user_id, purpose, rp_id, origin, expires_at)
        VALUES (@challengeHash, @projectId, @env, @userId, @purpose, @rpId, @origin, @expiresAt)`),
      takeChallenge: p('DELETE FROM auth_passkey_challenges WHERE challenge_hash = ? RETURNING *'),
      user: p('SELECT 1 FROM auth_users WHERE id = ? AND project_id = ? AND env = ?').pluck(),
      insertExchange:
        p(`INSERT INTO auth_exchange_codes (code_hash, project_id, env, user_id, provider, ip, user_agent, expires_at, client_challenge, second_factor)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      prune: p('DELETE FROM auth_passkey_challenges WHERE expires_at < ?'),
    };
  }

  add(k: PasskeyRow): Promise<boolean> {
    return this.writer.run(
      () =>
        this.q.add.run({
          ...k,
          publicKey: Buffer.from(k.publicKey),
          transports: JSON.stringify(k.transports),
          backedUp: k.backedUp ? 1 : 0,
          backupEligible: k.backupEligible ? 1 : 0,
        }).changes > 0,
    );
  }

  async byCredentialId(projectId: string, env: Env, credentialId: string): Promise<PasskeyRow | undefined> {
    const r = this.q.byCredential.get(projectId, env, credentialId);
    return r ? toPasskey(r, true) : undefined;
  }

  async listForUser(projectId: string, env: Env, userId: string): Promise<PasskeyRow[]> {
    return this.q.forUser.all(projectId, env, userId).map((r) => toPasskey(r, true));
  }

  remove(projectId: string, env: Env, userId: string, id: string): Promise<PasskeyRow | undefined> {
    return this.writer.run(() => {
      const r = this.q.remove.get(projectId, env, userId, id);
      return r ? toPasskey(r, true) : undefined;
    });
  }

  use(id: string, counter: number, backedUp: boolean, at: number): Promise<boolean> {
    return this.writer.run(() => this.q.use.run({ id, counter, backedUp: backedUp ? 1 : 0, at }).changes > 0);
  }

  putChallenge(c: PasskeyChallengeRow): Promise<void> {
    return this.writer.run(() => void this.q.putChallenge.run(c));
  }

  takeChallenge(challengeHash: string): Promise<PasskeyChallengeRow | undefined> {
    return this.writer.run(() => {
      const r = this.q.takeChallenge.get(challengeHash);
      return r ? toChallenge(r) : undefined;
    });
  }

  insertExchange(
    x: { codeHash: string; expiresAt: number; clientChallenge: string | null; secondFactor: boolean },
    projectId: string,
    env: Env,
    userId: string,
    provider: string,
    origin: Origin,
  ): Promise<boolean> {
    return this.writer.run(() => {
      if (!this.q.user.get(userId, projectId, env)) return false;
      this.q.insertExchange.run(
        x.codeHash,
        projectId,
        env,
        userId,
        provider,
        origin.ip,
        origin.userAgent,
        x.expiresAt,
        x.clientChallenge,
        x.secondFactor ? 1 : 0,
      );
      return true;
    });
  }

  prune(now: number): Promise<void> {
    return this.writer.run(() => void this.q.prune.run(now));
  }
}
