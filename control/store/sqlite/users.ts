// User management in SQLite (auth/users): listing and searching a project's users, their identities and
// live sessions, updates, bans and deletion. Every read and write is scoped by project and environment, so
// another project's (or environment's) user id never matches. Writes go through the group writer.
import type Database from 'better-sqlite3';
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import type { BanRow, Env, IdentityRow, ManagedUser, SessionRow, UserAdmin, UserChanges, UserQuery, UserRow } from '../index.js';
import { toSession, toUser } from '../rows.js';

/** A prefix taken literally by LIKE … ESCAPE '\'. */
const likePrefix = (prefix: string): string => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

const toBan = (r: any): BanRow | null =>
  r.banned_at == null ? null : { bannedAt: r.banned_at, reason: r.ban_reason ?? '', expiresAt: r.ban_expires_at ?? null };

const toManaged = (r: any): ManagedUser => ({
  user: toUser(r),
  phoneVerified: !!r.phone_verified,
  metadata: JSON.parse(r.metadata ?? '{}') as Record<string, unknown>,
  ban: toBan(r),
});

export class SqliteUsers implements UserAdmin {
  private readonly q;
  /** The list's statements, one per combination of filters. */
  private readonly lists = new Map<string, Database.Statement>();

  constructor(
    private readonly db: Db,
    private readonly writer: GroupWriter,
  ) {
    const p = (sql: string) => db.prepare(sql);
    this.q = {
      user: p('SELECT * FROM auth_users WHERE id = ? AND project_id = ? AND env = ?'),
      cursor: p('SELECT created_at FROM auth_users WHERE id = ? AND project_id = ? AND env = ?').pluck(),
      identities: p('SELECT provider, subject, created_at FROM auth_identities WHERE user_id = ? AND project_id = ? AND env = ? ORDER BY created_at, provider'),
      live: p(`SELECT * FROM auth_sessions WHERE user_id = ? AND project_id = ? AND env = ? AND revoked_at IS NULL AND expires_at > ?
        ORDER BY created_at DESC, id DESC`),
      ban: p(`UPDATE auth_users SET banned_at = @bannedAt, ban_reason = @reason, ban_expires_at = @expiresAt
        WHERE id = @id AND project_id = @projectId AND env = @env`),
      unban: p('UPDATE auth_users SET banned_at = NULL, ban_reason = NULL, ban_expires_at = NULL WHERE id = ? AND project_id = ? AND env = ?'),
      banOf: p('SELECT banned_at, ban_reason, ban_expires_at FROM auth_users WHERE id = ?'),
      revokeAll: p('UPDATE auth_sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ? RETURNING token_hash').pluck(),
      deleteSessions: p('DELETE FROM auth_sessions WHERE user_id = ?'),
      deleteIdentities: p('DELETE FROM auth_identities WHERE user_id = ?'),
      deleteExchange: p('DELETE FROM auth_exchange_codes WHERE user_id = ?'),
      deleteOtp: p('DELETE FROM auth_otp_codes WHERE project_id = ? AND env = ? AND channel = ? AND target = ?'),
      deleteMagicLinks: p('DELETE FROM auth_magic_links WHERE project_id = ? AND env = ? AND email = ?'),
      scrubAudit: p('UPDATE auth_audit SET email = NULL, phone = NULL, ip = NULL, user_agent = NULL WHERE user_id = ? AND project_id = ?'),
      deleteUser: p('DELETE FROM auth_users WHERE id = ?'),
    };
  }

  async list(projectId: string, env: Env, q: UserQuery): Promise<{ users: ManagedUser[]; hasMore: boolean } | undefined> {
    const where = ['u.project_id = @projectId', 'u.env = @env'];
    const params: Record<string, unknown> = { projectId, env, limit: q.limit + 1 };
    if (q.after !== undefined) {
      const at = this.q.cursor.get(q.after, projectId, env) as number | undefined;
      if (at === undefined) return undefined;
      where.push('(u.created_at < @cursorAt OR (u.created_at = @cursorAt AND u.id < @cursorId))');
      Object.assign(params, { cursorAt: at, cursorId: q.after });
    }
    if (q.email !== undefined) {
      where.push('lower(u.email) = lower(@email)');
      params.email = q.email;
    }
    if (q.emailPrefix !== undefined) {
      where.push("lower(u.email) LIKE lower(@emailLike) ESCAPE '\\'");
      params.emailLike = likePrefix(q.emailPrefix);
    }
    if (q.phone !== undefined) {
      where.push('u.phone = @phone');
      params.phone = q.phone;
    }
    if (q.provider !== undefined) {
      const subject = q.subject !== undefined ? ' AND i.subject = @subject' : '';
      where.push(
        `EXISTS (SELECT 1 FROM auth_identities i WHERE i.user_id = u.id AND i.project_id = u.project_id AND i.env = u.env AND i.provider = @provider${subject})`,
      );
      params.provider = q.provider;
      if (q.subject !== undefined) params.subject = q.subject;
    }
    const range = (column: string, name: string, op: string, v: number | undefined) => {
      if (v === undefined) return;
      where.push(`u.${column} ${op} @${name}`);
      params[name] = v;
    };
    range('created_at', 'createdAfter', '>=', q.createdAfter);
    range('created_at', 'createdBefore', '<', q.createdBefore);
    range('last_sign_in', 'lastSignInAfter', '>=', q.lastSignInAfter);
    range('last_sign_in', 'lastSignInBefore', '<', q.lastSignInBefore);
    const sql = `SELECT u.* FROM auth_users u WHERE ${where.join(' AND ')} ORDER BY u.created_at DESC, u.id DESC LIMIT @limit`;
    let stmt = this.lists.get(sql);
    if (!stmt) this.lists.set(sql, (stmt = this.db.prepare(sql)));
    const rows = stmt.all(params) as any[];
    return { users: rows.slice(0, q.limit).map(toManaged), hasMore: rows.length > q.limit };
  }

  async get(projectId: string, env: Env, userId: string): Promise<ManagedUser | undefined> {
    const r = this.q.user.get(userId, projectId, env);
    return r ? toManaged(r) : undefined;
  }

  async identities(projectId: string, env: Env, userId: string): Promise<IdentityRow[]> {
    return (this.q.identities.all(userId, projectId, env) as any[]).map((r) => ({ provider: r.provider, subject: r.subject, createdAt: r.created_at }));
  }

  async liveSessions(projectId: string, env: Env, userId: string, now: number): Promise<SessionRow[]> {
    return this.q.live.all(userId, projectId, env, now).map(toSession);
  }

  update(projectId: string, env: Env, userId: string, c: UserChanges): Promise<ManagedUser | undefined | 'conflict'> {
    return this.writer.run(() => {
      const sets: string[] = [];
      const params: Record<string, unknown> = { id: userId, projectId, env };
      if (c.emailVerified !== undefined) {
        sets.push('email_verified = @emailVerified');
        params.emailVerified = c.emailVerified ? 1 : 0;
      }
      if (c.phoneVerified !== undefined) {
        sets.push('phone_verified = @phoneVerified');
        params.phoneVerified = c.phoneVerified ? 1 : 0;
      }
      if (c.name !== undefined) {
        sets.push('name = @name');
        params.name = c.name;
      }
      if (c.metadata !== undefined) {
        sets.push('metadata = @metadata');
        params.metadata = JSON.stringify(c.metadata);
      }
      if (sets.length) {
        try {
          this.db.prepare(`UPDATE auth_users SET ${sets.join(', ')} WHERE id = @id AND project_id = @projectId AND env = @env`).run(params);
        } catch (err) {
          // auth_users_verified_email: another user of the environment has this address verified.
          if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') return 'conflict' as const;
          throw err;
        }
      }
      const r = this.q.user.get(userId, projectId, env);
      return r ? toManaged(r) : undefined;
    });
  }

  ban(projectId: string, env: Env, userId: string, ban: BanRow): Promise<ManagedUser | undefined> {
    return this.writer.run(() => {
      if (!this.q.ban.run({ id: userId, projectId, env, ...ban }).changes) return undefined;
      return toManaged(this.q.user.get(userId, projectId, env));
    });
  }

  unban(projectId: string, env: Env, userId: string): Promise<ManagedUser | undefined> {
    return this.writer.run(() => {
      if (!this.q.unban.run(userId, projectId, env).changes) return undefined;
      return toManaged(this.q.user.get(userId, projectId, env));
    });
  }

  async banOf(userId: string): Promise<BanRow | null> {
    const r = this.q.banOf.get(userId);
    return r ? toBan(r) : null;
  }

  delete(projectId: string, env: Env, userId: string, now: number): Promise<{ user: UserRow; revokedTokenHashes: string[] } | undefined> {
    return this.writer.run(() => {
      const r = this.q.user.get(userId, projectId, env) as any;
      if (!r) return undefined;
      const user = toUser(r);
      const revokedTokenHashes = this.q.revokeAll.all(now, userId, now) as string[];
      this.q.deleteSessions.run(userId);
      this.q.deleteIdentities.run(userId);
      this.q.deleteExchange.run(userId);
      // Codes and magic links are kept by the address as the routes normalise it (lowercase), codes also by the E.164 number.
      if (user.email) {
        this.q.deleteOtp.run(projectId, env, 'email', user.email.toLowerCase());
        this.q.deleteMagicLinks.run(projectId, env, user.email.toLowerCase());
      }
      if (user.phone) this.q.deleteOtp.run(projectId, env, 'sms', user.phone);
      this.q.scrubAudit.run(userId, projectId);
      this.q.deleteUser.run(userId);
      return { user, revokedTokenHashes };
    });
  }
}
