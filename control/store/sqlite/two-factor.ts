// Second factors in SQLite (auth/two-factor): TOTP secrets, backup codes and pending sign-ins. Every
// single-use step (a TOTP step, a backup code, a ticket's try and its taking) is one conditional write
// inside one writer call: atomic against any racer.
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import type { Env, PendingAttempt, PendingSignInRow, TotpRow, TwoFactorStore } from '../index.js';

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
  enrol: r.enrol === 1,
  attempts: r.attempts,
  expiresAt: r.expires_at,
});

export class SqliteTwoFactor implements TwoFactorStore {
  private readonly q;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
  ) {
    const p = (sql: string) => db.prepare(sql);
    this.q = {
      totp: p('SELECT * FROM auth_totp WHERE user_id = ?'),
      startTotp: p(`INSERT INTO auth_totp (user_id, secret, created_at, confirmed_at, last_step) VALUES (?, ?, ?, NULL, NULL)
        ON CONFLICT(user_id) DO UPDATE SET secret = excluded.secret, created_at = excluded.created_at, last_step = NULL
        WHERE auth_totp.confirmed_at IS NULL`),
      confirmTotp: p('UPDATE auth_totp SET confirmed_at = ?, last_step = ? WHERE user_id = ? AND secret = ? AND confirmed_at IS NULL'),
      useStep: p('UPDATE auth_totp SET last_step = ? WHERE user_id = ? AND confirmed_at IS NOT NULL AND (last_step IS NULL OR last_step < ?)'),
      removeTotp: p('DELETE FROM auth_totp WHERE user_id = ?'),
      removeCodes: p('DELETE FROM auth_backup_codes WHERE user_id = ?'),
      insertCode: p('INSERT OR IGNORE INTO auth_backup_codes (user_id, code_hash, created_at, used_at) VALUES (?, ?, ?, NULL)'),
      codesLeft: p('SELECT count(*) FROM auth_backup_codes WHERE user_id = ? AND used_at IS NULL').pluck(),
      useCode: p('UPDATE auth_backup_codes SET used_at = ? WHERE user_id = ? AND code_hash = ? AND used_at IS NULL'),
      putPending:
        p(`INSERT INTO auth_pending_sign_ins (ticket_hash, project_id, env, user_id, provider, ip, user_agent, session_ttl_ms, enrol, attempts, expires_at)
        VALUES (@ticketHash, @projectId, @env, @userId, @provider, @ip, @userAgent, @sessionTtlMs, @enrol, 0, @expiresAt)`),
      pending: p('SELECT * FROM auth_pending_sign_ins WHERE ticket_hash = ? AND project_id = ? AND env = ?'),
      countTry: p('UPDATE auth_pending_sign_ins SET attempts = attempts + 1 WHERE ticket_hash = ?'),
      take: p('DELETE FROM auth_pending_sign_ins WHERE ticket_hash = ?'),
      prune: p('DELETE FROM auth_pending_sign_ins WHERE expires_at < ?'),
    };
  }

  async totp(userId: string): Promise<TotpRow | undefined> {
    const r = this.q.totp.get(userId);
    return r ? toTotp(r) : undefined;
  }

  startTotp(userId: string, secret: string, at: number): Promise<boolean> {
    return this.writer.run(() => this.q.startTotp.run(userId, secret, at).changes > 0);
  }

  confirmTotp(userId: string, secret: string, step: number, at: number, backupCodeHashes: string[]): Promise<boolean> {
    return this.writer.run(() => {
      if (this.q.confirmTotp.run(at, step, userId, secret).changes === 0) return false;
      this.replace(userId, backupCodeHashes, at);
      return true;
    });
  }

  useTotpStep(userId: string, step: number): Promise<boolean> {
    return this.writer.run(() => this.q.useStep.run(step, userId, step).changes > 0);
  }

  removeTotp(userId: string): Promise<boolean> {
    return this.writer.run(() => {
      this.q.removeCodes.run(userId);
      return this.q.removeTotp.run(userId).changes > 0;
    });
  }

  async backupCodesLeft(userId: string): Promise<number> {
    return this.q.codesLeft.get(userId) as number;
  }

  replaceBackupCodes(userId: string, codeHashes: string[], at: number): Promise<void> {
    return this.writer.run(() => this.replace(userId, codeHashes, at));
  }

  private replace(userId: string, codeHashes: string[], at: number): void {
    this.q.removeCodes.run(userId);
    for (const h of codeHashes) this.q.insertCode.run(userId, h, at);
  }

  useBackupCode(userId: string, codeHash: string, at: number): Promise<boolean> {
    return this.writer.run(() => this.q.useCode.run(at, userId, codeHash).changes > 0);
  }

  putPending(row: Omit<PendingSignInRow, 'attempts'>): Promise<void> {
    return this.writer.run(() => void this.q.putPending.run({ ...row, enrol: row.enrol ? 1 : 0 }));
  }

  async pending(ticketHash: string, projectId: string, env: Env, now: number): Promise<PendingAttempt> {
    const r = this.q.pending.get(ticketHash, projectId, env);
    return r ? standing(toPending(r), now, Number.POSITIVE_INFINITY) : { status: 'missing' };
  }

  attemptPending(ticketHash: string, projectId: string, env: Env, now: number, maxAttempts: number): Promise<PendingAttempt> {
    return this.writer.run((): PendingAttempt => {
      const r = this.q.pending.get(ticketHash, projectId, env);
      if (!r) return { status: 'missing' };
      const p = toPending(r);
      const s = standing(p, now, maxAttempts);
      if (s.status !== 'ok') return s;
      this.q.countTry.run(ticketHash);
      return { status: 'ok', pending: { ...p, attempts: p.attempts + 1 } };
    });
  }

  takePending(ticketHash: string): Promise<boolean> {
    return this.writer.run(() => this.q.take.run(ticketHash).changes > 0);
  }

  prune(now: number): Promise<void> {
    return this.writer.run(() => void this.q.prune.run(now));
  }
}

/** How a ticket stands before a try: expired, out of tries, or usable. */
function standing(p: PendingSignInRow, now: number, maxAttempts: number): PendingAttempt {
  if (p.expiresAt <= now) return { status: 'expired' };
  if (p.attempts >= maxAttempts) return { status: 'locked' };
  return { status: 'ok', pending: p };
}
