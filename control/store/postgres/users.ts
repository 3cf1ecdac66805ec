// User management on PostgreSQL (auth/users): see the SQLite backend of the same name. Every read and write
// is scoped by project and environment; a deletion is one transaction.
import type { BanRow, Env, IdentityRow, ManagedUser, SessionRow, UserAdmin, UserChanges, UserQuery, UserRow } from '../index.js';
import { toSession, toUser } from '../rows.js';
import type { PgDb } from './db.js';

/** A prefix taken literally by LIKE … ESCAPE '\'. */
const likePrefix = (prefix: string): string => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

const toBan = (r: any): BanRow | null =>
  r.banned_at == null ? null : { bannedAt: r.banned_at, reason: r.ban_reason ?? '', expiresAt: r.ban_expires_at ?? null };

const toManaged = (r: any): ManagedUser => ({
  user: toUser(r),
  phoneVerified: !!r.phone_verified,
  metadata: (r.metadata ?? {}) as Record<string, unknown>,
  ban: toBan(r),
});

const USER = 'SELECT * FROM auth_users WHERE id = $1 AND project_id = $2 AND env = $3';

export class PgUsers implements UserAdmin {
  constructor(private readonly db: PgDb) {}

  async list(projectId: string, env: Env, q: UserQuery): Promise<{ users: ManagedUser[]; hasMore: boolean } | undefined> {
    const params: unknown[] = [projectId, env];
    const where = ['u.project_id = $1', 'u.env = $2'];
    const p = (v: unknown) => `$${params.push(v)}`;
    if (q.after !== undefined) {
      const at = (
        await this.db.query<{ created_at: number }>('SELECT created_at FROM auth_users WHERE id = $1 AND project_id = $2 AND env = $3', [
          q.after,
          projectId,
          env,
        ])
      ).rows[0]?.created_at;
      if (at === undefined) return undefined;
      const a = p(at);
      where.push(`(u.created_at < ${a} OR (u.created_at = ${a} AND u.id < ${p(q.after)}))`);
    }
    if (q.email !== undefined) where.push(`lower(u.email) = lower(${p(q.email)})`);
    if (q.emailPrefix !== undefined) where.push(`lower(u.email) LIKE lower(${p(likePrefix(q.emailPrefix))}) ESCAPE '\\'`);
    if (q.phone !== undefined) where.push(`u.phone = ${p(q.phone)}`);
    if (q.provider !== undefined) {
      const subject = q.subject !== undefined ? ` AND i.subject = ${p(q.subject)}` : '';
      where.push(
        `EXISTS (SELECT 1 FROM auth_identities i WHERE i.user_id = u.id AND i.project_id = u.project_id AND i.env = u.env AND i.provider = ${p(q.provider)}${subject})`,
      );
    }
    if (q.createdAfter !== undefined) where.push(`u.created_at >= ${p(q.createdAfter)}`);
    if (q.createdBefore !== undefined) where.push(`u.created_at < ${p(q.createdBefore)}`);
    if (q.lastSignInAfter !== undefined) where.push(`u.last_sign_in >= ${p(q.lastSignInAfter)}`);
    if (q.lastSignInBefore !== undefined) where.push(`u.last_sign_in < ${p(q.lastSignInBefore)}`);
    const rows = (
      await this.db.query(`SELECT u.* FROM auth_users u WHERE ${where.join(' AND ')} ORDER BY u.created_at DESC, u.id DESC LIMIT ${p(q.limit + 1)}`, params)
    ).rows;
    return { users: rows.slice(0, q.limit).map(toManaged), hasMore: rows.length > q.limit };
  }

  async get(projectId: string, env: Env, userId: string): Promise<ManagedUser | undefined> {
    const r = (await this.db.query(USER, [userId, projectId, env])).rows[0];
    return r ? toManaged(r) : undefined;
  }

  async identities(projectId: string, env: Env, userId: string): Promise<IdentityRow[]> {
    const r = await this.db.query(
      'SELECT provider, subject, created_at FROM auth_identities WHERE user_id = $1 AND project_id = $2 AND env = $3 ORDER BY created_at, provider',
      [userId, projectId, env],
    );
    return r.rows.map((x: any) => ({ provider: x.provider, subject: x.subject, createdAt: x.created_at }));
  }

  async liveSessions(projectId: string, env: Env, userId: string, now: number): Promise<SessionRow[]> {
    const r = await this.db.query(
      `SELECT * FROM auth_sessions WHERE user_id = $1 AND project_id = $2 AND env = $3 AND revoked_at IS NULL AND expires_at > $4
       ORDER BY created_at DESC, id DESC`,
      [userId, projectId, env, now],
    );
    return r.rows.map(toSession);
  }

  async update(projectId: string, env: Env, userId: string, c: UserChanges): Promise<ManagedUser | undefined | 'conflict'> {
    const params: unknown[] = [userId, projectId, env];
    const sets: string[] = [];
    const set = (column: string, v: unknown) => sets.push(`${column} = $${params.push(v)}`);
    if (c.emailVerified !== undefined) set('email_verified', c.emailVerified);
    if (c.phoneVerified !== undefined) set('phone_verified', c.phoneVerified);
    if (c.name !== undefined) set('name', c.name);
    if (c.metadata !== undefined) set('metadata', JSON.stringify(c.metadata));
    if (!sets.length) return this.get(projectId, env, userId);
    try {
      const r = (await this.db.query(`UPDATE auth_users SET ${sets.join(', ')} WHERE id = $1 AND project_id = $2 AND env = $3 RETURNING *`, params)).rows[0];
      return r ? toManaged(r) : undefined;
    } catch (err) {
      // auth_users_verified_email: another user of the environment has this address verified.
      if ((err as { code?: string }).code === '23505') return 'conflict';
      throw err;
    }
  }

  async ban(projectId: string, env: Env, userId: string, ban: BanRow): Promise<ManagedUser | undefined> {
    const r = (
      await this.db.query(
        'UPDATE auth_users SET banned_at = $4, ban_reason = $5, ban_expires_at = $6 WHERE id = $1 AND project_id = $2 AND env = $3 RETURNING *',
        [userId, projectId, env, ban.bannedAt, ban.reason, ban.expiresAt],
      )
    ).rows[0];
    return r ? toManaged(r) : undefined;
  }

  async unban(projectId: string, env: Env, userId: string): Promise<ManagedUser | undefined> {
    const r = (
      await this.db.query(
        'UPDATE auth_users SET banned_at = NULL, ban_reason = NULL, ban_expires_at = NULL WHERE id = $1 AND project_id = $2 AND env = $3 RETURNING *',
        [userId, projectId, env],
      )
    ).rows[0];
    return r ? toManaged(r) : undefined;
  }

  async banOf(userId: string): Promise<BanRow | null> {
    const r = (await this.db.query('SELECT banned_at, ban_reason, ban_expires_at FROM auth_users WHERE id = $1', [userId])).rows[0];
    return r ? toBan(r) : null;
  }

  delete(projectId: string, env: Env, userId: string, now: number): Promise<{ user: UserRow; revokedTokenHashes: string[] } | undefined> {
    return this.db.tx(async (tx) => {
      // Locked first: a sign-in racing the deletion waits, then finds no user.
      const r = (await tx.query(`${USER} FOR UPDATE`, [userId, projectId, env])).rows[0];
      if (!r) return undefined;
      const user = toUser(r);
      const revoked = await tx.query<{ token_hash: string }>(
        'UPDATE auth_sessions SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL AND expires_at > $1 RETURNING token_hash',
        [now, userId],
      );
      await tx.query('DELETE FROM auth_sessions WHERE user_id = $1', [userId]);
      await tx.query('DELETE FROM auth_identities WHERE user_id = $1', [userId]);
      await tx.query('DELETE FROM auth_exchange_codes WHERE user_id = $1', [userId]);
      // Codes and magic links are kept by the address as the routes normalise it (lowercase), codes also by the E.164 number.
      if (user.email) {
        const address = user.email.toLowerCase();
        await tx.query("DELETE FROM auth_otp_codes WHERE project_id = $1 AND env = $2 AND channel = 'email' AND target = $3", [projectId, env, address]);
        await tx.query('DELETE FROM auth_magic_links WHERE project_id = $1 AND env = $2 AND email = $3', [projectId, env, address]);
      }
      if (user.phone)
        await tx.query("DELETE FROM auth_otp_codes WHERE project_id = $1 AND env = $2 AND channel = 'sms' AND target = $3", [projectId, env, user.phone]);
      await tx.query('UPDATE auth_audit SET email = NULL, phone = NULL, ip = NULL, user_agent = NULL WHERE user_id = $1 AND project_id = $2', [
        userId,
        projectId,
      ]);
      await tx.query('DELETE FROM auth_users WHERE id = $1', [userId]);
      return { user, revokedTokenHashes: revoked.rows.map((x) => x.token_hash) };
    });
  }
}
