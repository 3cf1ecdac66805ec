// The auth API's data in SQLite (users, identities, sessions, codes, providers,
// origins): same database and group-commit writer as the rest of the store. Every
// multi-step change (sign-in, code consumption) runs inside one writer call, i.e. one
// savepoint: atomic against any racer.
import crypto from 'node:crypto';
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
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
import { toProvider, toSession, toUser } from '../rows.js';

export class SqliteSignIn implements SignInStore {
  private readonly q;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
  ) {
    const p = (sql: string) => db.prepare(sql);
    this.q = {
      settings: p('SELECT * FROM auth_settings WHERE project_id = ?'),
      putSettings: p(`INSERT INTO auth_settings (project_id, session_ttl_seconds, code_from, telegram_window_seconds, require_code_verifier,
          two_factor, jwt_audience, jwt_ttl_seconds, updated_at)
        VALUES (@projectId, @sessionTtlSeconds, @codeFrom, @telegramWindowSeconds, @requireCodeVerifier, @twoFactor, @jwtAudience, @jwtTtlSeconds, @at)
        ON CONFLICT(project_id) DO UPDATE SET session_ttl_seconds = excluded.session_ttl_seconds, code_from = excluded.code_from,
          telegram_window_seconds = excluded.telegram_window_seconds, require_code_verifier = excluded.require_code_verifier,
          two_factor = excluded.two_factor, jwt_audience = excluded.jwt_audience, jwt_ttl_seconds = excluded.jwt_ttl_seconds, updated_at = excluded.updated_at`),
      providers: p('SELECT * FROM auth_providers WHERE project_id = ? ORDER BY provider'),
      provider: p('SELECT * FROM auth_providers WHERE project_id = ? AND provider = ?'),
      putProvider: p(`INSERT INTO auth_providers (project_id, provider, enabled, methods, client_id, client_secret, bot_token, endpoints, region, updated_at)
        VALUES (@projectId, @provider, @enabled, @methods, @clientId, @clientSecret, @botToken, @endpoints, @region, @updatedAt)
        ON CONFLICT(project_id, provider) DO UPDATE SET enabled = excluded.enabled, methods = excluded.methods, client_id = excluded.client_id,
          client_secret = excluded.client_secret, bot_token = excluded.bot_token, endpoints = excluded.endpoints, region = excluded.region,
          updated_at = excluded.updated_at`),
      origins: p('SELECT origin FROM auth_origins WHERE project_id = ? ORDER BY origin').pluck(),
      hasOrigin: p('SELECT 1 FROM auth_origins WHERE project_id = ? AND origin = ?').pluck(),
      addOrigin: p('INSERT INTO auth_origins (project_id, origin, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING'),
      removeOrigin: p('DELETE FROM auth_origins WHERE project_id = ? AND origin = ?'),
      callbackUrls: p('SELECT url FROM auth_callback_urls WHERE project_id = ? ORDER BY url').pluck(),
      addCallbackUrl: p('INSERT INTO auth_callback_urls (project_id, url, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING'),
      removeCallbackUrl: p('DELETE FROM auth_callback_urls WHERE project_id = ? AND url = ?'),

      insertState:
        p(`INSERT INTO auth_oauth_states (state_hash, project_id, env, provider, callback_url, code_verifier, nonce, client_challenge, created_at, expires_at)
        VALUES (@stateHash, @projectId, @env, @provider, @callbackUrl, @codeVerifier, @nonce, @clientChallenge, @createdAt, @expiresAt)`),
      takeState: p('DELETE FROM auth_oauth_states WHERE state_hash = ? RETURNING *'),
      liveStates: p('SELECT count(*) FROM auth_oauth_states WHERE project_id = ? AND expires_at > ?').pluck(),

      identity: p('SELECT user_id FROM auth_identities WHERE project_id = ? AND env = ? AND provider = ? AND subject = ?').pluck(),
      insertIdentity: p('INSERT INTO auth_identities (project_id, env, provider, subject, user_id, created_at) VALUES (?, ?, ?, ?, ?, ?)'),
      userById: p('SELECT * FROM auth_users WHERE id = ?'),
      userByVerifiedEmail: p('SELECT * FROM auth_users WHERE project_id = ? AND env = ? AND email = ? AND email_verified = 1'),
      insertUser: p(`INSERT INTO auth_users (id, project_id, env, email, email_verified, name, avatar_url, phone, username, provider, created_at, last_sign_in)
        VALUES (@id, @projectId, @env, @email, @emailVerified, @name, @avatarUrl, @phone, @username, @provider, @createdAt, @lastSignIn)`),
      // Fills what the user record lacks; never overwrites what it has (the app may rely on it).
      touchUser: p(`UPDATE auth_users SET last_sign_in = @at, name = COALESCE(name, @name), avatar_url = COALESCE(avatar_url, @avatarUrl),
        phone = COALESCE(phone, @phone), username = COALESCE(username, @username) WHERE id = @id`),
      touchSignIn: p('UPDATE auth_users SET last_sign_in = ? WHERE id = ?'),
      verifyUserPhone: p('UPDATE auth_users SET phone_verified = 1 WHERE id = ? AND phone = ?'),
      verifyUserEmail: p('UPDATE auth_users SET email = ?, email_verified = 1 WHERE id = ? AND (email IS NULL OR email = ?)'),

      insertSession: p(`INSERT INTO auth_sessions (id, token_hash, project_id, env, user_id, provider, ip, user_agent, created_at, expires_at)
        VALUES (@id, @tokenHash, @projectId, @env, @userId, @provider, @ip, @userAgent, @createdAt, @expiresAt)`),
      sessionByHash: p('SELECT * FROM auth_sessions WHERE token_hash = ? AND revoked_at IS NULL'),
      revokeByHash: p('UPDATE auth_sessions SET revoked_at = ? WHERE token_hash = ? AND revoked_at IS NULL'),
      revokeById: p('UPDATE auth_sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL RETURNING token_hash').pluck(),

      insertExchange: p(`INSERT INTO auth_exchange_codes (code_hash, project_id, env, user_id, provider, ip, user_agent, expires_at, client_challenge)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      exchange: p('SELECT * FROM auth_exchange_codes WHERE code_hash = ?'),
      useExchange: p('UPDATE auth_exchange_codes SET used_at = ?, session_id = ? WHERE code_hash = ?'),

      otp: p('SELECT * FROM auth_otp_codes WHERE project_id = ? AND env = ? AND channel = ? AND target = ?'),
      putOtp: p(`INSERT INTO auth_otp_codes (project_id, env, channel, target, code_hash, attempts, created_at, expires_at, test_code)
        VALUES (@projectId, @env, @channel, @target, @codeHash, 0, @createdAt, @expiresAt, @testCode)
        ON CONFLICT(project_id, env, channel, target) DO UPDATE SET code_hash = excluded.code_hash, attempts = 0,
          created_at = excluded.created_at, expires_at = excluded.expires_at, test_code = excluded.test_code`),
      failOtp: p('UPDATE auth_otp_codes SET attempts = attempts + 1 WHERE project_id = ? AND env = ? AND channel = ? AND target = ?'),
      deleteOtp: p('DELETE FROM auth_otp_codes WHERE project_id = ? AND env = ? AND channel = ? AND target = ?'),

      insertReplay: p('INSERT INTO auth_replays (digest, expires_at) VALUES (?, ?) ON CONFLICT DO NOTHING'),

      pruneStates: p('DELETE FROM auth_oauth_states WHERE expires_at < ?'),
      pruneExchange: p('DELETE FROM auth_exchange_codes WHERE expires_at < ?'),
      pruneOtp: p('DELETE FROM auth_otp_codes WHERE expires_at < ?'),
      pruneReplays: p('DELETE FROM auth_replays WHERE expires_at < ?'),
      pruneSessions: p('DELETE FROM auth_sessions WHERE expires_at < ?'),
    };
  }

  // Project configuration

  async settings(projectId: string): Promise<AuthSettingsRow> {
    const r = this.q.settings.get(projectId) as any;
    return {
      sessionTtlSeconds: r?.session_ttl_seconds ?? null,
      codeFrom: r?.code_from ?? null,
      telegramWindowSeconds: r?.telegram_window_seconds ?? null,
      requireCodeVerifier: r?.require_code_verifier == null ? null : r.require_code_verifier === 1,
      twoFactor: r?.two_factor ?? null,
      jwtAudience: r?.jwt_audience ?? null,
      jwtTtlSeconds: r?.jwt_ttl_seconds ?? null,
    };
  }

  putSettings(projectId: string, s: AuthSettingsRow, at: number): Promise<void> {
    const requireCodeVerifier = s.requireCodeVerifier === null ? null : s.requireCodeVerifier ? 1 : 0;
    return this.writer.run(() => void this.q.putSettings.run({ projectId, ...s, requireCodeVerifier, at }));
  }

  async providers(projectId: string): Promise<ProviderRow[]> {
    return this.q.providers.all(projectId).map(toProvider);
  }

  async provider(projectId: string, provider: string): Promise<ProviderRow | undefined> {
    const r = this.q.provider.get(projectId, provider);
    return r ? toProvider(r) : undefined;
  }

  putProvider(projectId: string, row: ProviderRow): Promise<void> {
    return this.writer.run(
      () =>
        void this.q.putProvider.run({
          projectId,
          provider: row.provider,
          enabled: row.enabled ? 1 : 0,
          methods: JSON.stringify(row.methods),
          clientId: row.clientId,
          clientSecret: row.clientSecret,
          botToken: row.botToken,
          endpoints: JSON.stringify(row.endpoints),
          region: JSON.stringify(row.region),
          updatedAt: row.updatedAt,
        }),
    );
  }

  async origins(projectId: string): Promise<string[]> {
    return this.q.origins.all(projectId) as string[];
  }

  async hasOrigin(projectId: string, origin: string): Promise<boolean> {
    return this.q.hasOrigin.get(projectId, origin) !== undefined;
  }

  addOrigin(projectId: string, origin: string, at: number): Promise<void> {
    return this.writer.run(() => void this.q.addOrigin.run(projectId, origin, at));
  }

  /** False when the origin was not on the list. */
  removeOrigin(projectId: string, origin: string): Promise<boolean> {
    return this.writer.run(() => this.q.removeOrigin.run(projectId, origin).changes > 0);
  }

  async callbackUrls(projectId: string): Promise<string[]> {
    return this.q.callbackUrls.all(projectId) as string[];
  }

  addCallbackUrl(projectId: string, url: string, at: number): Promise<void> {
    return this.writer.run(() => void this.q.addCallbackUrl.run(projectId, url, at));
  }

  /** False when the URL was not on the list. */
  removeCallbackUrl(projectId: string, url: string): Promise<boolean> {
    return this.writer.run(() => this.q.removeCallbackUrl.run(projectId, url).changes > 0);
  }

  // OAuth transactions

  /** Counts and inserts in one writer call: no other write comes between. */
  insertState(s: OAuthStateRow & { stateHash: string; createdAt: number }, maxLive: number): Promise<boolean> {
    return this.writer.run(() => {
      if ((this.q.liveStates.get(s.projectId, s.createdAt) as number) >= maxLive) return false;
      this.q.insertState.run(s);
      return true;
    });
  }

  takeState(stateHash: string): Promise<OAuthStateRow | undefined> {
    return this.writer.run(() => {
      const r = this.q.takeState.get(stateHash) as any;
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
    });
  }

  // Users and sessions

  /**
   * Finds the user of (provider, subject), or links by an authoritative
   * verified email, or creates one; then opens its session, or (OAuth) records
   * the one-time exchange code that will open it. One savepoint.
   */
  signIn(
    projectId: string,
    env: Env,
    profile: SignInProfile,
    origin: Origin,
    at: number,
    then: { session: NewSession } | { exchange: { codeHash: string; expiresAt: number; clientChallenge: string | null } },
  ): Promise<{ user: UserRow; session?: SessionRow; created: boolean }> {
    return this.writer.run(() => {
      const { userId, created } = this.resolveUser(projectId, env, profile, at);
      if ('exchange' in then) {
        const x = then.exchange;
        this.q.insertExchange.run(x.codeHash, projectId, env, userId, profile.provider, origin.ip, origin.userAgent, x.expiresAt, x.clientChallenge);
        return { user: toUser(this.q.userById.get(userId)), created };
      }
      const session = this.insertSession(projectId, env, userId, profile.provider, origin, then.session);
      return { user: toUser(this.q.userById.get(userId)), session, created };
    });
  }

  private resolveUser(projectId: string, env: Env, profile: SignInProfile, now: number): { userId: string; created: boolean } {
    let userId = this.q.identity.get(projectId, env, profile.provider, profile.subject) as string | undefined;
    if (!userId && profile.email && profile.emailVerified) {
      const linked = this.q.userByVerifiedEmail.get(projectId, env, profile.email) as any;
      if (linked) {
        userId = linked.id as string;
        this.q.insertIdentity.run(projectId, env, profile.provider, profile.subject, userId, now);
      }
    }
    if (userId) {
      this.q.touchUser.run({ id: userId, at: now, name: profile.name, avatarUrl: profile.avatarUrl, phone: profile.phone, username: profile.username });
      // An address proven now (e.g. by an email code) becomes the user's verified email if it had none.
      if (profile.email && profile.emailVerified && !this.q.userByVerifiedEmail.get(projectId, env, profile.email)) {
        this.q.verifyUserEmail.run(profile.email, userId, profile.email);
      }
      if (profile.phone && profile.phoneVerified) this.q.verifyUserPhone.run(userId, profile.phone);
      return { userId, created: false };
    }
    userId = crypto.randomUUID();
    this.q.insertUser.run({
      id: userId,
      projectId,
      env,
      email: profile.email,
      emailVerified: profile.emailVerified && profile.email ? 1 : 0,
      name: profile.name,
      avatarUrl: profile.avatarUrl,
      phone: profile.phone,
      username: profile.username,
      provider: profile.provider,
      createdAt: now,
      lastSignIn: now,
    });
    this.q.insertIdentity.run(projectId, env, profile.provider, profile.subject, userId, now);
    if (profile.phone && profile.phoneVerified) this.q.verifyUserPhone.run(userId, profile.phone);
    return { userId, created: true };
  }

  private insertSession(projectId: string, env: Env, userId: string, provider: string, origin: Origin, s: NewSession): SessionRow {
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
    this.q.insertSession.run({ ...row, tokenHash: s.tokenHash });
    return row;
  }

  async sessionByHash(tokenHash: string): Promise<SessionRow | undefined> {
    const r = this.q.sessionByHash.get(tokenHash);
    return r ? toSession(r) : undefined;
  }

  async userById(id: string): Promise<UserRow | undefined> {
    const r = this.q.userById.get(id);
    return r ? toUser(r) : undefined;
  }

  /** False when there was no live session with that token. */
  revokeSession(tokenHash: string, at: number): Promise<boolean> {
    return this.writer.run(() => this.q.revokeByHash.run(at, tokenHash).changes > 0);
  }

  openSession(projectId: string, env: Env, userId: string, provider: string, origin: Origin, session: NewSession): Promise<SessionInfoRow | undefined> {
    return this.writer.run(() => {
      const u = this.q.userById.get(userId) as any;
      if (!u || u.project_id !== projectId || u.env !== env) return undefined;
      this.q.touchSignIn.run(session.createdAt, userId);
      const row = this.insertSession(projectId, env, userId, provider, origin, session);
      return { user: toUser(this.q.userById.get(userId)), session: row };
    });
  }

  revokeSessionById(sessionId: string, at: number): Promise<string | undefined> {
    return this.writer.run(() => (this.q.revokeById.get(at, sessionId) as string | undefined) ?? undefined);
  }

  /**
   * Uses a one-time exchange code: the first use by the same project and
   * environment opens its session; any later use revokes that session (the
   * code leaked) and returns the revoked token's hash for cache invalidation.
   */
  useExchangeCode(
    codeHash: string,
    projectId: string,
    env: Env,
    session: NewSession,
    bound: (clientChallenge: string | null) => boolean,
  ): Promise<ExchangeResult> {
    return this.writer.run((): ExchangeResult => {
      const c = this.q.exchange.get(codeHash) as any;
      if (!c || c.project_id !== projectId || c.env !== env) return { status: 'missing' };
      // Another browser's code (login CSRF) is refused without being used up: it stays its owner's.
      if (c.used_at === null && !bound(c.client_challenge ?? null)) return { status: 'unbound' };
      if (c.used_at !== null) {
        const revoked = c.session_id ? (this.q.revokeById.get(session.createdAt, c.session_id) as string | undefined) : undefined;
        return { status: 'reused', revokedTokenHash: revoked ?? null, revokedSessionId: revoked ? c.session_id : null, userId: c.user_id };
      }
      if (c.expires_at <= session.createdAt) return { status: 'expired' };
      const row = this.insertSession(projectId, env, c.user_id, c.provider, { ip: c.ip, userAgent: c.user_agent }, session);
      this.q.useExchange.run(session.createdAt, row.id, codeHash);
      return { status: 'ok', session: row, user: toUser(this.q.userById.get(c.user_id)), secondFactor: c.second_factor === 1 };
    });
  }

  // One-time codes (email, SMS)

  /** When the current code of a target was issued, if it has one. */
  async otpIssuedAt(projectId: string, env: Env, channel: string, target: string): Promise<number | undefined> {
    return (this.q.otp.get(projectId, env, channel, target) as any)?.created_at;
  }

  /** Replaces the target's code (a resend invalidates the previous one and resets its attempts). */
  putOtp(o: NewOtp): Promise<void> {
    return this.writer.run(() => void this.q.putOtp.run(o));
  }

  /** Reads back the (encrypted) code of the test environment. */
  async testOtp(projectId: string, channel: string, target: string): Promise<{ testCode: string; expiresAt: number } | undefined> {
    const r = this.q.otp.get(projectId, 'test', channel, target) as any;
    return r?.test_code ? { testCode: r.test_code, expiresAt: r.expires_at } : undefined;
  }

  /**
   * Checks a code and consumes it on success, in one savepoint: of two racers
   * with the right code only one gets 'ok'. `matches` compares in constant time.
   */
  checkOtp(
    projectId: string,
    env: Env,
    channel: string,
    target: string,
    now: number,
    maxAttempts: number,
    matches: (codeHash: string) => boolean,
  ): Promise<OtpCheck> {
    return this.writer.run((): OtpCheck => {
      const r = this.q.otp.get(projectId, env, channel, target) as any;
      if (!r) return 'missing';
      if (r.expires_at <= now) {
        this.q.deleteOtp.run(projectId, env, channel, target);
        return 'expired';
      }
      if (r.attempts >= maxAttempts) return 'locked';
      if (!matches(r.code_hash)) {
        this.q.failOtp.run(projectId, env, channel, target);
        return r.attempts + 1 >= maxAttempts ? 'locked' : 'wrong';
      }
      this.q.deleteOtp.run(projectId, env, channel, target);
      return 'ok';
    });
  }

  // Replay protection

  /** Records a one-shot payload; false when it was seen before. */
  markUsed(digest: string, expiresAt: number): Promise<boolean> {
    return this.writer.run(() => this.q.insertReplay.run(digest, expiresAt).changes > 0);
  }

  /** Drops expired transactions, codes, replay records and long-ended sessions. */
  prune(now: number): Promise<void> {
    return this.writer.run(() => {
      this.q.pruneStates.run(now);
      // Used exchange codes stay a day, so a late replay still revokes its session.
      this.q.pruneExchange.run(now - DAY_MS);
      this.q.pruneOtp.run(now);
      this.q.pruneReplays.run(now);
      // Ended sessions are kept a week (who signed in from where), then dropped.
      this.q.pruneSessions.run(now - 7 * DAY_MS);
    });
  }
}
