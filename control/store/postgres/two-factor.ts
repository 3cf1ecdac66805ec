// Second factors on PostgreSQL (auth/two-factor): TOTP secrets, backup codes and pending sign-ins. Each
// single-use step is one conditional UPDATE or DELETE (a TOTP step only if later than the last, a backup
// code only if unused, a ticket taken once) or a row read FOR UPDATE in the transaction that counts the
// try, so racers on any nodes take turns and one wins.
import type { Env, PendingAttempt, PendingSignInRow, TotpRow, TwoFactorStore } from '../index.js';
import type { PgDb, Tx } from './db.js';

const toTotp = (r: any): TotpRow => ({
  userId: r.user_id,
  secret: r.secret,
  createdAt: r.created_at,
  confirmedAt: r.confirmed_at ?? null,
  lastStep: r.last_step ?? null,
});

const toPending = (r: any): PendingSignInRow => ({
  ticketHash: r.ticket_hash,
  projectId: r.project_id,
  env: r.env,
  userId: r.user_id,
  provider: r.provider,
  ip: r.ip ?? null,
  userAgent: r.user_agent ?? null,
  sessionTtlMs: r.session_ttl_ms,
  enrol: r.enrol,
  attempts: r.attempts,
  expiresAt: r.expires_at,
});

/** How a ticket stands before a try: expired, out of tries, or usable. */
function standing(p: PendingSignInRow, now: number, maxAttempts: number): PendingAttempt {
  if (p.expiresAt <= now) return { status: 'expired' };
  if (p.attempts >= maxAttempts) return { status: 'locked' };
  return { status: 'ok', pending: p };
}

export class PgTwoFactor implements TwoFactorStore {
  constructor(private readonly db: PgDb) {}

  async totp(userId: string): Promise<TotpRow | undefined> {
    const r = (await this.db.query('SELECT * FROM auth_totp WHERE user_id = $1', [userId])).rows[0];
    return r ? toTotp(r) : undefined;
  }

  async startTotp(userId: string, secret: string, at: number): Promise<boolean> {
    const r = await this.db.query(
      `INSERT INTO auth_totp (user_id, secret, created_at, confirmed_at, last_step) VALUES ($1, $2, $3, NULL, NULL)
       ON CONFLICT (user_id) DO UPDATE SET secret = excluded.secret, created_at = excluded.created_at, last_step = NULL
       WHERE auth_totp.confirmed_at IS NULL`,
      [userId, secret, at],
    );
    return r.rowCount > 0;
  }

  confirmTotp(userId: string, secret: string, step: number, at: number, backupCodeHashes: string[]): Promise<boolean> {
    return this.db.tx(async (tx) => {
      const r = await tx.query('UPDATE auth_totp SET confirmed_at = $1, last_step = $2 WHERE user_id = $3 AND secret = $4 AND confirmed_at IS NULL', [
        at,
        step,
        userId,
        secret,
      ]);
      if (r.rowCount === 0) return false;
      await replace(tx, userId, backupCodeHashes, at);
      return true;
    });
  }

  async useTotpStep(userId: string, step: number): Promise<boolean> {
    const r = await this.db.query(
      'UPDATE auth_totp SET last_step = $1 WHERE user_id = $2 AND confirmed_at IS NOT NULL AND (last_step IS NULL OR last_step < $1)',
      [step, userId],
    );
    return r.rowCount > 0;
  }

  removeTotp(userId: string): Promise<boolean> {
    return this.db.tx(async (tx) => {
      await tx.query('DELETE FROM auth_backup_codes WHERE user_id = $1', [userId]);
      return (await tx.query('DELETE FROM auth_totp WHERE user_id = $1', [userId])).rowCount > 0;
    });
  }

  async backupCodesLeft(userId: string): Promise<number> {
    return (await this.db.query<{ n: number }>('SELECT count(*)::int AS n FROM auth_backup_codes WHERE user_id = $1 AND used_at IS NULL', [userId])).rows[0]!.n;
  }

  replaceBackupCodes(userId: string, codeHashes: string[], at: number): Promise<void> {
    return this.db.tx((tx) => replace(tx, userId, codeHashes, at));
  }

  async useBackupCode(userId: string, codeHash: string, at: number): Promise<boolean> {
    const r = await this.db.query('UPDATE auth_backup_codes SET used_at = $1 WHERE user_id = $2 AND code_hash = $3 AND used_at IS NULL', [
      at,
      userId,
      codeHash,
    ]);
    return r.rowCount > 0;
  }

  async putPending(row: Omit<PendingSignInRow, 'attempts'>): Promise<void> {
    await this.db.query(
      `INSERT INTO auth_pending_sign_ins (ticket_hash, project_id, env, user_id, provider, ip, user_agent, session_ttl_ms, enrol, attempts, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 0, $10)`,
      [row.ticketHash, row.projectId, row.env, row.userId, row.provider, row.ip, row.userAgent, row.sessionTtlMs, row.enrol, row.expiresAt],
    );
  }

  async pending(ticketHash: string, projectId: string, env: Env, now: number): Promise<PendingAttempt> {
    const r = (await this.db.query('SELECT * FROM auth_pending_sign_ins WHERE ticket_hash = $1 AND project_id = $2 AND env = $3', [ticketHash, projectId, env]))
      .rows[0];
    return r ? standing(toPending(r), now, Number.POSITIVE_INFINITY) : { status: 'missing' };
  }

  attemptPending(ticketHash: string, projectId: string, env: Env, now: number, maxAttempts: number): Promise<PendingAttempt> {
    return this.db.tx(async (tx): Promise<PendingAttempt> => {
      // Racers on any node wait here for the one before them: every try counts against the same limit.
      const r = (
        await tx.query('SELECT * FROM auth_pending_sign_ins WHERE ticket_hash = $1 AND project_id = $2 AND env = $3 FOR UPDATE', [ticketHash, projectId, env])
      ).rows[0];
      if (!r) return { status: 'missing' };
      const p = toPending(r);
      const s = standing(p, now, maxAttempts);
      if (s.status !== 'ok') return s;
      await tx.query('UPDATE auth_pending_sign_ins SET attempts = attempts + 1 WHERE ticket_hash = $1', [ticketHash]);
      return { status: 'ok', pending: { ...p, attempts: p.attempts + 1 } };
    });
  }

  async takePending(ticketHash: string): Promise<boolean> {
    return (await this.db.query('DELETE FROM auth_pending_sign_ins WHERE ticket_hash = $1', [ticketHash])).rowCount > 0;
  }

  async prune(now: number): Promise<void> {
    await this.db.query('DELETE FROM auth_pending_sign_ins WHERE expires_at < $1', [now]);
  }
}

async function replace(tx: Tx, userId: string, codeHashes: string[], at: number): Promise<void> {
  await tx.query('DELETE FROM auth_backup_codes WHERE user_id = $1', [userId]);
  if (codeHashes.length)
    await tx.query('INSERT INTO auth_backup_codes (user_id, code_hash, created_at) SELECT $1, h, $3 FROM unnest($2::text[]) AS h ON CONFLICT DO NOTHING', [
      userId,
      codeHashes,
      at,
    ]);
}
