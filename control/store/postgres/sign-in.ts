// The auth API's data on PostgreSQL. The single-use secrets hold across nodes: a state
// is taken with DELETE … RETURNING (one taker), and an exchange code or a sign-in code
// is read FOR UPDATE in the transaction that uses it, so racers on any nodes take turns
// and every wrong try on any node counts against the same 5.
import crypto from 'node:crypto';
import { DAY_MS } from '../../../core/clock.js';
import type {
  AuthSettingsRow,
  Env,
  ExchangeResult,
  NewOtp,
  NewSession,
  OAuthStateRow,
  Origin,
  OtpCheck,
  ProviderRow,
  SessionInfoRow,
  SessionRow,
  SignInProfile,
  SignInStore,
  UserRow,
} from '../index.js';
import type { PgDb, Tx } from './db.js';
import { toProvider, toSession, toUser } from '../rows.js';

const OTP_KEY = 'project_id = $1 AND env = $2 AND channel = $3 AND target = $4';
const isUniqueViolation = (err: unknown) => (err as { code?: string })?.code === '23505';
/** The first key of the per-project advisory lock around counting and inserting OAuth states. */
const STATES_LOCK = 0x7374; // "st"

export class PgSignIn implements SignInStore {
  constructor(private readonly db: PgDb) {}

  // Project configuration

  async settings(projectId: string): Promise<AuthSettingsRow> {
    const r = (await this.db.query('SELECT * FROM auth_settings WHERE project_id = $1', [projectId])).rows[0];
    return {
      sessionTtlSeconds: r?.session_ttl_seconds ?? null,
      codeFrom: r?.code_from ?? null,
      telegramWindowSeconds: r?.telegram_window_seconds ?? null,
      requireCodeVerifier: r?.require_code_verifier ?? null,
      twoFactor: r?.two_factor ?? null,
      jwtAudience: r?.jwt_audience ?? null,
      jwtTtlSeconds: r?.jwt_ttl_seconds ?? null,
    };
  }

  async putSettings(projectId: string, s: AuthSettingsRow, at: number): Promise<void> {
    await this.db.query(
      `INSERT INTO auth_settings (project_id, session_ttl_seconds, code_from, telegram_window_seconds, require_code_verifier,
         two_factor, jwt_audience, jwt_ttl_seconds, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (project_id) DO UPDATE SET session_ttl_seconds = excluded.session_ttl_seconds, code_from = excluded.code_from,
         telegram_window_seconds = excluded.telegram_window_seconds, require_code_verifier = excluded.require_code_verifier,
         two_factor = excluded.two_factor, jwt_audience = excluded.jwt_audience, jwt_ttl_seconds = excluded.jwt_ttl_seconds, updated_at = excluded.updated_at`,
      [projectId, s.sessionTtlSeconds, s.codeFrom, s.telegramWindowSeconds, s.requireCodeVerifier, s.twoFactor, s.jwtAudience, s.jwtTtlSeconds, at],
    );
  }

  async providers(projectId: string): Promise<ProviderRow[]> {
    return (await this.db.query('SELECT * FROM auth_providers WHERE project_id = $1 ORDER BY provider', [projectId])).rows.map(toProvider);
  }

  async provider(projectId: string, provider: string): Promise<ProviderRow | undefined> {
    const r = (await this.db.query('SELECT * FROM auth_providers WHERE project_id = $1 AND provider = $2', [projectId, provider])).rows[0];
    return r ? toProvider(r) : undefined;
  }

  async putProvider(projectId: string, row: ProviderRow): Promise<void> {
    await this.db.query(
      `INSERT INTO auth_providers (project_id, provider, enabled, methods, client_id, client_secret, bot_token, endpoints, region, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (project_id, provider) DO UPDATE SET enabled = excluded.enabled, methods = excluded.methods, client_id = excluded.client_id,
         client_secret = excluded.client_secret, bot_token = excluded.bot_token, endpoints = excluded.endpoints, region = excluded.region,
         updated_at = excluded.updated_at`,
      [
        projectId,
        row.provider,
        row.enabled,
        JSON.stringify(row.methods),
        row.clientId,
        row.clientSecret,
        row.botToken,
        JSON.stringify(row.endpoints),
        JSON.stringify(row.region),
        row.updatedAt,
      ],
    );
  }

  async origins(projectId: string): Promise<string[]> {
    return (await this.db.query<{ origin: string }>('SELECT origin FROM auth_origins WHERE project_id = $1 ORDER BY origin', [projectId])).rows.map(
      (r) => r.origin,
    );
  }

  async hasOrigin(projectId: string, origin: string): Promise<boolean> {
    return (await this.db.query('SELECT 1 FROM auth_origins WHERE project_id = $1 AND origin = $2', [projectId, origin])).rowCount > 0;
  }

  async addOrigin(projectId: string, origin: string, at: number): Promise<void> {
    await this.db.query('INSERT INTO auth_origins (project_id, origin, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [projectId, origin, at]);
  }

  async removeOrigin(projectId: string, origin: string): Promise<boolean> {
    return (await this.db.query('DELETE FROM auth_origins WHERE project_id = $1 AND origin = $2', [projectId, origin])).rowCount > 0;
  }

  async callbackUrls(projectId: string): Promise<string[]> {
    return (await this.db.query<{ url: string }>('SELECT url FROM auth_callback_urls WHERE project_id = $1 ORDER BY url', [projectId])).rows.map((r) => r.url);
  }

  async addCallbackUrl(projectId: string, url: string, at: number): Promise<void> {
    await this.db.query('INSERT INTO auth_callback_urls (project_id, url, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [projectId, url, at]);
  }

  async removeCallbackUrl(projectId: string, url: string): Promise<boolean> {
    return (await this.db.query('DELETE FROM auth_callback_urls WHERE project_id = $1 AND url = $2', [projectId, url])).rowCount > 0;
  }

  // OAuth transactions

  /**
   * The project's transaction-level advisory lock (its own key space: two int keys) makes the inserts of
   * one project take turns on every node, so the count each reads includes the others' commits.
   */
  async insertState(s: OAuthStateRow & { stateHash: string; createdAt: number }, maxLive: number): Promise<boolean> {
    return this.db.tx(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [STATES_LOCK, s.projectId]);
      const live = (
        await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM auth_oauth_states WHERE project_id = $1 AND expires_at > $2', [s.projectId, s.createdAt])
      ).rows[0]!.n;
      if (live >= maxLive) return false;
      await tx.query(
        `INSERT INTO auth_oauth_states (state_hash, project_id, env, provider, callback_url, code_verifier, nonce, client_challenge, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [s.stateHash, s.projectId, s.env, s.provider, s.callbackUrl, s.codeVerifier, s.nonce, s.clientChallenge, s.createdAt, s.expiresAt],
      );
      return true;
    });
  }

  async takeState(stateHash: string): Promise<OAuthStateRow | undefined> {
    const r = (await this.db.query('DELETE FROM auth_oauth_states WHERE state_hash = $1 RETURNING *', [stateHash])).rows[0];
    if (!r) return undefined;
    return {
      projectId: r.project_id,
      env: r.env,
      provider: r.provider,
      callbackUrl: r.callback_url,
      codeVerifier: r.code_verifier,
      nonce: r.nonce,
      clientChallenge: r.client_challenge ?? null,
      expiresAt: r.expires_at,
    };
  }

  // Users and sessions

  async signIn(
    projectId: string,
    env: Env,
    profile: SignInProfile,
    origin: Origin,
    at: number,
    then: { session: NewSession } | { exchange: { codeHash: string; expiresAt: number; clientChallenge: string | null } },
  ): Promise<{ user: UserRow; session?: SessionRow; created: boolean }> {
    // Two nodes creating the same new user at once: one insert wins, the other runs again and finds it.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.db.tx(async (tx) => {
          const { userId, created } = await this.resolveUser(tx, projectId, env, profile, at);
          const user = async () => toUser((await tx.query('SELECT * FROM auth_users WHERE id = $1', [userId])).rows[0]);
          if ('exchange' in then) {
            const x = then.exchange;
            await tx.query(
              `INSERT INTO auth_exchange_codes (code_hash, project_id, env, user_id, provider, ip, user_agent, expires_at, client_challenge)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
              [x.codeHash, projectId, env, userId, profile.provider, origin.ip, origin.userAgent, x.expiresAt, x.clientChallenge],
            );
            return { user: await user(), created };
          }
          const session = await this.insertSession(tx, projectId, env, userId, profile.provider, origin, then.session);
          return { user: await user(), session, created };
        });
      } catch (err) {
        if (isUniqueViolation(err) && attempt < 3) continue;
        throw err;
      }
    }
  }

  private async resolveUser(tx: Tx, projectId: string, env: Env, profile: SignInProfile, now: number): Promise<{ userId: string; created: boolean }> {
    const byVerifiedEmail = async (email: string) =>
      (
        await tx.query<{ id: string }>('SELECT id FROM auth_users WHERE project_id = $1 AND env = $2 AND email = $3 AND email_verified', [
          projectId,
          env,
          email,
        ])
      ).rows[0]?.id;
    let userId = (
      await tx.query<{ user_id: string }>('SELECT user_id FROM auth_identities WHERE project_id = $1 AND env = $2 AND provider = $3 AND subject = $4', [
        projectId,
        env,
        profile.provider,
        profile.subject,
      ])
    ).rows[0]?.user_id;
    const insertIdentity = (id: string) =>
      tx.query('INSERT INTO auth_identities (project_id, env, provider, subject, user_id, created_at) VALUES ($1, $2, $3, $4, $5, $6)', [
        projectId,
        env,
        profile.provider,
        profile.subject,
        id,
        now,
      ]);
    if (!userId && profile.email && profile.emailVerified) {
      userId = await byVerifiedEmail(profile.email);
      if (userId) await insertIdentity(userId);
    }
    if (userId) {
      // Fills what the user record lacks; never overwrites what it has (the app may rely on it).
      await tx.query(
        `UPDATE auth_users SET last_sign_in = $2, name = COALESCE(name, $3), avatar_url = COALESCE(avatar_url, $4),
           phone = COALESCE(phone, $5), username = COALESCE(username, $6) WHERE id = $1`,
        [userId, now, profile.name, profile.avatarUrl, profile.phone, profile.username],
      );
      // An address proven now (e.g. by an email code) becomes the user's verified email if it had none.
      if (profile.email && profile.emailVerified && !(await byVerifiedEmail(profile.email))) {
        await tx.query('UPDATE auth_users SET email = $1, email_verified = true WHERE id = $2 AND (email IS NULL OR email = $1)', [profile.email, userId]);
      }
      if (profile.phone && profile.phoneVerified) await this.verifyPhone(tx, userId, profile.phone);
      return { userId, created: false };
    }
    userId = crypto.randomUUID();
    await tx.query(
      `INSERT INTO auth_users (id, project_id, env, email, email_verified, name, avatar_url, phone, username, provider, created_at, last_sign_in)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)`,
      [
        userId,
        projectId,
        env,
        profile.email,
        !!(profile.emailVerified && profile.email),
        profile.name,
        profile.avatarUrl,
        profile.phone,
        profile.username,
        profile.provider,
        now,
      ],
    );
    await insertIdentity(userId);
    if (profile.phone && profile.phoneVerified) await this.verifyPhone(tx, userId, profile.phone);
    return { userId, created: true };
  }

  /** A number proven by this sign-in (an SMS code) is verified, if it is the user's number. */
  private async verifyPhone(tx: Tx, userId: string, phone: string): Promise<void> {
    await tx.query('UPDATE auth_users SET phone_verified = true WHERE id = $1 AND phone = $2', [userId, phone]);
  }

  private async insertSession(tx: Tx, projectId: string, env: Env, userId: string, provider: string, origin: Origin, s: NewSession): Promise<SessionRow> {
    const row: SessionRow = {
      id: s.id,
      projectId,
      env,
      userId,
      provider,
      ip: origin.ip,
      userAgent: origin.userAgent,
      createdAt: s.createdAt,
      expiresAt: s.expiresAt,
    };
    await tx.query(
      `INSERT INTO auth_sessions (id, token_hash, project_id, env, user_id, provider, ip, user_agent, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [row.id, s.tokenHash, projectId, env, userId, provider, row.ip, row.userAgent, row.createdAt, row.expiresAt],
    );
    return row;
  }

  async sessionByHash(tokenHash: string): Promise<SessionRow | undefined> {
    const r = (await this.db.query('SELECT * FROM auth_sessions WHERE token_hash = $1 AND revoked_at IS NULL', [tokenHash])).rows[0];
    return r ? toSession(r) : undefined;
  }

  async userById(id: string): Promise<UserRow | undefined> {
    const r = (await this.db.query('SELECT * FROM auth_users WHERE id = $1', [id])).rows[0];
    return r ? toUser(r) : undefined;
  }

  async revokeSession(tokenHash: string, at: number): Promise<boolean> {
    return (await this.db.query('UPDATE auth_sessions SET revoked_at = $1 WHERE token_hash = $2 AND revoked_at IS NULL', [at, tokenHash])).rowCount > 0;
  }

  openSession(projectId: string, env: Env, userId: string, provider: string, origin: Origin, session: NewSession): Promise<SessionInfoRow | undefined> {
    return this.db.tx(async (tx) => {
      const u = (
        await tx.query('UPDATE auth_users SET last_sign_in = $4 WHERE id = $1 AND project_id = $2 AND env = $3 RETURNING *', [
          userId,
          projectId,
          env,
          session.createdAt,
        ])
      ).rows[0];
      if (!u) return undefined;
      return { user: toUser(u), session: await this.insertSession(tx, projectId, env, userId, provider, origin, session) };
    });
  }

  async revokeSessionById(sessionId: string, at: number): Promise<string | undefined> {
    const r = await this.db.query<{ token_hash: string }>(
      'UPDATE auth_sessions SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING token_hash',
      [at, sessionId],
    );
    return r.rows[0]?.token_hash;
  }

  useExchangeCode(
    codeHash: string,
    projectId: string,
    env: Env,
    session: NewSession,
    bound: (clientChallenge: string | null) => boolean,
  ): Promise<ExchangeResult> {
    return this.db.tx(async (tx): Promise<ExchangeResult> => {
      const c = (await tx.query('SELECT * FROM auth_exchange_codes WHERE code_hash = $1 FOR UPDATE', [codeHash])).rows[0];
      if (!c || c.project_id !== projectId || c.env !== env) return { status: 'missing' };
      // Another browser's code (login CSRF) is refused without being used up: it stays its owner's.
      if (c.used_at === null && !bound(c.client_challenge ?? null)) return { status: 'unbound' };
      if (c.used_at !== null) {
        const revoked = c.session_id
          ? (
              await tx.query<{ token_hash: string }>('UPDATE auth_sessions SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING token_hash', [
                session.createdAt,
                c.session_id,
              ])
            ).rows[0]?.token_hash
          : undefined;
        return { status: 'reused', revokedTokenHash: revoked ?? null, revokedSessionId: revoked ? c.session_id : null, userId: c.user_id };
      }
      if (c.expires_at <= session.createdAt) return { status: 'expired' };
      const row = await this.insertSession(tx, projectId, env, c.user_id, c.provider, { ip: c.ip, userAgent: c.user_agent }, session);
      await tx.query('UPDATE auth_exchange_codes SET used_at = $1, session_id = $2 WHERE code_hash = $3', [session.createdAt, row.id, codeHash]);
      return {
        status: 'ok',
        session: row,
        user: toUser((await tx.query('SELECT * FROM auth_users WHERE id = $1', [c.user_id])).rows[0]),
        secondFactor: c.second_factor === true,
      };
    });
  }

  // One-time codes (email, SMS)

  async otpIssuedAt(projectId: string, env: Env, channel: string, target: string): Promise<number | undefined> {
    return (await this.db.query<{ created_at: number }>(`SELECT created_at FROM auth_otp_codes WHERE ${OTP_KEY}`, [projectId, env, channel, target])).rows[0]
      ?.created_at;
  }

  async putOtp(o: NewOtp): Promise<void> {
    await this.db.query(
      `INSERT INTO auth_otp_codes (project_id, env, channel, target, code_hash, attempts, created_at, expires_at, test_code)
       VALUES ($1, $2, $3, $4, $5, 0, $6, $7, $8)
       ON CONFLICT (project_id, env, channel, target) DO UPDATE SET code_hash = excluded.code_hash, attempts = 0,
         created_at = excluded.created_at, expires_at = excluded.expires_at, test_code = excluded.test_code`,
      [o.projectId, o.env, o.channel, o.target, o.codeHash, o.createdAt, o.expiresAt, o.testCode],
    );
  }

  async testOtp(projectId: string, channel: string, target: string): Promise<{ testCode: string; expiresAt: number } | undefined> {
    const r = (
      await this.db.query<{ test_code: string | null; expires_at: number }>(`SELECT test_code, expires_at FROM auth_otp_codes WHERE ${OTP_KEY}`, [
        projectId,
        'test',
        channel,
        target,
      ])
    ).rows[0];
    return r?.test_code ? { testCode: r.test_code, expiresAt: r.expires_at } : undefined;
  }

  checkOtp(
    projectId: string,
    env: Env,
    channel: string,
    target: string,
    now: number,
    maxAttempts: number,
    matches: (codeHash: string) => boolean,
  ): Promise<OtpCheck> {
    const key = [projectId, env, channel, target];
    return this.db.tx(async (tx): Promise<OtpCheck> => {
      // Racers on any node wait here for the one before them; a code the first consumed is gone for the next.
      const r = (
        await tx.query<{ code_hash: string; attempts: number; expires_at: number }>(
          `SELECT code_hash, attempts, expires_at FROM auth_otp_codes WHERE ${OTP_KEY} FOR UPDATE`,
          key,
        )
      ).rows[0];
      if (!r) return 'missing';
      if (r.expires_at <= now) {
        await tx.query(`DELETE FROM auth_otp_codes WHERE ${OTP_KEY}`, key);
        return 'expired';
      }
      if (r.attempts >= maxAttempts) return 'locked';
      if (!matches(r.code_hash)) {
        await tx.query(`UPDATE auth_otp_codes SET attempts = attempts + 1 WHERE ${OTP_KEY}`, key);
        return r.attempts + 1 >= maxAttempts ? 'locked' : 'wrong';
      }
      await tx.query(`DELETE FROM auth_otp_codes WHERE ${OTP_KEY}`, key);
      return 'ok';
    });
  }

  // Replay protection

  async markUsed(digest: string, expiresAt: number): Promise<boolean> {
    return (await this.db.query('INSERT INTO auth_replays (digest, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING', [digest, expiresAt])).rowCount > 0;
  }

  prune(now: number): Promise<void> {
    return this.db.tx(async (tx) => {
      await tx.query('DELETE FROM auth_oauth_states WHERE expires_at < $1', [now]);
      // Used exchange codes stay a day, so a late replay still revokes its session.
      await tx.query('DELETE FROM auth_exchange_codes WHERE expires_at < $1', [now - DAY_MS]);
      await tx.query('DELETE FROM auth_otp_codes WHERE expires_at < $1', [now]);
      await tx.query('DELETE FROM auth_replays WHERE expires_at < $1', [now]);
      // Ended sessions are kept a week (who signed in from where), then dropped.
      await tx.query('DELETE FROM auth_sessions WHERE expires_at < $1', [now - 7 * DAY_MS]);
    });
  }
}
