// Sessions: opaque 256-bit tokens, stored as SHA-256 only. Checks answer from
// an in-process cache; sign-out (and a leaked exchange code) invalidates
// through the invalidator at once, so there is no revocation lag. After
// `expiresAt` a token is invalid.
import crypto from 'node:crypto';
import { ApiError } from '../core/errors.js';
import { clock } from '../core/clock.js';
import type { Invalidator } from '../core/invalidation.js';
import type { Caller } from '../control/api-keys/authenticate.js';
import type { SignInStore, Env, NewSession, Origin, SessionRow, SignInProfile, UserRow } from '../control/store/index.js';
import { randomToken, sha256 } from './crypto.js';
import { bindingCheck } from './browser-binding.js';
import { settings } from './settings.js';
import type { AuthEvents, EventScope } from './events.js';

export interface SessionInfo {
  user: UserRow;
  session: SessionRow;
}

/**
 * What the rest of control may ask of sessions: the public gRPC CheckSession and the HTTP fast lane.
 * `check` answers the session of a token for the caller's project and key kind, or throws
 * ApiError('SESSION_INVALID'); `cached` answers from memory only.
 */
export type SessionChecker = Pick<Sessions, 'check' | 'cached'>;

export interface OpenedSession extends SessionInfo {
  token: string;
}

/**
 * A sign-in held back before it got a session: the user proved the first factor and must give a second
 * (auth/two-factor). The client gets `ticket` instead of a session token; only the right factor turns it
 * into a session.
 */
export interface PendingSignIn {
  pending: 'two_factor';
  user: UserRow;
  /** Single use, short-lived (pgp_…); stored hashed. */
  ticket: string;
  /** The factors that can finish the sign-in ('totp', 'backup_code'); empty when `enrol` is asked first. */
  methods: string[];
  /** The project requires a second factor and this user has none yet: enrolment with the ticket comes first. */
  enrol: boolean;
  expiresAt: number;
}

export const isPending = (s: OpenedSession | PendingSignIn): s is PendingSignIn => 'pending' in s;

/** How the session about to be handed out was earned. */
export interface Admission {
  scope: EventScope;
  user: UserRow;
  session: SessionRow;
  origin: Origin;
  /** The sign-in already gave a second factor (a two-factor check, a passkey with user verification). */
  secondFactor: boolean;
}

/**
 * Runs before a new session's token is handed out (sessions.ts admit): throws an ApiError to refuse the
 * sign-in (a banned user), answers a PendingSignIn to hold it for a second step, or undefined to let it
 * through. A refused or held session is revoked before anyone had its token.
 */
export interface SignInGate {
  admit(a: Admission): Promise<PendingSignIn | undefined>;
}

const CHANNEL = 'session';
const TOKEN_PREFIX = 'pgs_';
const invalidSession = () => new ApiError('SESSION_INVALID', 'Session is invalid or expired');

export const envOf = (caller: Caller): Env => caller.key.kind;
export const scopeOf = (caller: Caller): EventScope => ({ projectId: caller.project.id, env: envOf(caller) });
const clip = (o: Origin): Origin => ({ ip: o.ip, userAgent: o.userAgent?.slice(0, 512) ?? null });

export class Sessions {
  private readonly gates: SignInGate[] = [];
  private readonly byHash = new Map<string, SessionRow>();
  private readonly users = new Map<string, UserRow>();
  /** Bumped by every invalidation: a lookup that raced one is not cached. */
  private generation = 0;

  constructor(
    private readonly store: SignInStore,
    private readonly invalidator: Invalidator,
    /** Absent: no sign-in events (sessions built outside createAuth, e.g. in a unit test). */
    private readonly events?: AuthEvents,
  ) {
    invalidator.subscribe(CHANNEL, (key) => {
      this.generation++;
      if (key.startsWith('user:')) this.users.delete(key.slice(5));
      else this.byHash.delete(key);
    });
    // Invalidations may have been missed (Redis away): nothing cached is trusted.
    invalidator.onReset(() => {
      this.generation++;
      this.byHash.clear();
      this.users.clear();
    });
  }

  /** Gates run in the order added, each on every new session (bans first, then the second factor). */
  addGate(gate: SignInGate): void {
    this.gates.push(gate);
  }

  /** Runs the gates on a session no one has the token of yet; a refused or held one is revoked. */
  private async admit(a: Admission, token: string): Promise<OpenedSession | PendingSignIn> {
    try {
      for (const gate of this.gates) {
        const held = await gate.admit(a);
        if (held) {
          await this.store.revokeSessionById(a.session.id, clock.now());
          return held;
        }
      }
    } catch (err) {
      await this.store.revokeSessionById(a.session.id, clock.now());
      throw err;
    }
    await this.events?.sessionCreated(a.scope, a.user, a.session);
    return { token, user: a.user, session: a.session };
  }

  private newSession(ttlMs: number): { token: string; row: NewSession } {
    const now = clock.now();
    const token = randomToken(TOKEN_PREFIX);
    return { token, row: { id: crypto.randomUUID(), tokenHash: sha256(token), createdAt: now, expiresAt: now + ttlMs } };
  }

  /** Signs the person in: a session now (token sign-ins), or a one-time code that opens one later (OAuth). */
  async open(caller: Caller, profile: SignInProfile, origin: Origin, ttlMs: number): Promise<OpenedSession | PendingSignIn> {
    const { token, row } = this.newSession(ttlMs);
    const { user, session, created } = await this.store.signIn(caller.project.id, envOf(caller), profile, clip(origin), row.createdAt, { session: row });
    this.userChanged(user.id);
    if (created) await this.events?.userCreated(scopeOf(caller), user, clip(origin));
    return this.admit({ scope: scopeOf(caller), user, session: session!, origin: clip(origin), secondFactor: false }, token);
  }

  /**
   * Opens a session for a known user (a passkey sign-in, a second factor that finished a pending one); the
   * gates run as for any sign-in. SESSION_INVALID when the user is not the project's and environment's.
   */
  async openFor(
    scope: EventScope,
    userId: string,
    provider: string,
    origin: Origin,
    ttlMs: number,
    secondFactor: boolean,
  ): Promise<OpenedSession | PendingSignIn> {
    const { token, row } = this.newSession(ttlMs);
    const opened = await this.store.openSession(scope.projectId, scope.env, userId, provider, clip(origin), row);
    if (!opened) throw invalidSession();
    this.userChanged(userId);
    return this.admit({ scope, user: opened.user, session: opened.session, origin: clip(origin), secondFactor }, token);
  }

  /** Ends one session by id (user management, a ban): its token stops working at once on every node. */
  async revokeById(scope: EventScope, s: { sessionId: string; userId: string; user?: UserRow }, reason: string): Promise<boolean> {
    const hash = await this.store.revokeSessionById(s.sessionId, clock.now());
    if (!hash) return false;
    this.invalidator.publish(CHANNEL, hash);
    await this.events?.sessionRevoked(scope, s, reason);
    return true;
  }

  /** Drops cached copies of a user (its profile, ban or factors changed) on every node. */
  forgetUser(userId: string): void {
    this.userChanged(userId);
  }

  /** OAuth: resolves the user now and returns the `svc_code` whose exchange opens the session. */
  async openLater(project: EventScope, profile: SignInProfile, origin: Origin, clientChallenge: string | null): Promise<string> {
    const code = randomToken();
    const now = clock.now();
    const { user, created } = await this.store.signIn(project.projectId, project.env, profile, clip(origin), now, {
      exchange: { codeHash: sha256(code), expiresAt: now + settings.exchangeCodeTtlMs, clientChallenge },
    });
    this.userChanged(user.id);
    // Its session.created comes with the exchange.
    if (created) await this.events?.userCreated(project, user, clip(origin));
    return code;
  }

  /** Exchanges a one-time code for a session; a second use revokes that session. */
  async exchange(caller: Caller, code: string, ttlMs: number, binding: { verifier?: string; required: boolean }): Promise<OpenedSession | PendingSignIn> {
    const { token, row } = this.newSession(ttlMs);
    const r = await this.store.useExchangeCode(sha256(code), caller.project.id, envOf(caller), row, bindingCheck(binding.verifier, binding.required));
    switch (r.status) {
      case 'ok':
        return this.admit(
          {
            scope: scopeOf(caller),
            user: r.user,
            session: r.session,
            origin: { ip: r.session.ip, userAgent: r.session.userAgent },
            secondFactor: r.secondFactor,
          },
          token,
        );
      case 'reused':
        if (r.revokedTokenHash) this.invalidator.publish(CHANNEL, r.revokedTokenHash);
        if (r.revokedSessionId) await this.events?.sessionRevoked(scopeOf(caller), { sessionId: r.revokedSessionId, userId: r.userId }, 'code_reused');
        throw new ApiError('INVALID_CODE', 'This code was already used; its session has been revoked');
      case 'expired':
        throw new ApiError('CODE_EXPIRED', 'This code has expired');
      case 'unbound':
        throw new ApiError(
          'INVALID_CODE',
          binding.verifier === undefined
            ? 'This sign-in must be finished with the codeVerifier of the browser that started it'
            : 'codeVerifier does not match this sign-in: it was started in another browser',
        );
      default:
        throw new ApiError('INVALID_CODE', 'Unknown code');
    }
  }

  // A sign-in may have filled in the user's profile: cached copies must go.
  private userChanged(userId: string): void {
    this.invalidator.publish(CHANNEL, `user:${userId}`);
  }

  /** The session of a token, for this caller's project and key kind only. */
  async check(caller: Caller, token: string | undefined): Promise<SessionInfo> {
    if (!token || token.length > 200) throw invalidSession();
    const hash = sha256(token);
    let session = this.byHash.get(hash);
    if (!session) {
      const gen = this.generation;
      session = await this.store.sessionByHash(hash);
      if (!session) throw invalidSession();
      if (gen === this.generation) this.remember(this.byHash, hash, session);
    }
    if (!this.validFor(caller, session)) {
      if (session.expiresAt <= clock.now()) this.byHash.delete(hash);
      throw invalidSession();
    }
    let user = this.users.get(session.userId);
    if (!user) {
      const gen = this.generation;
      user = await this.store.userById(session.userId);
      if (!user) throw invalidSession();
      if (gen === this.generation) this.remember(this.users, user.id, user);
    }
    return { user, session };
  }

  /**
   * The session of a token when it and its user are in memory and it is valid for this
   * caller; otherwise undefined, and check() decides (it asks the store, or refuses).
   */
  cached(caller: Caller, token: string | undefined): SessionInfo | undefined {
    if (!token || token.length > 200) return undefined;
    const session = this.byHash.get(sha256(token));
    if (!session || !this.validFor(caller, session)) return undefined;
    const user = this.users.get(session.userId);
    return user && { user, session };
  }

  /** A token works only for its own project and key kind, until it expires. */
  private validFor(caller: Caller, session: SessionRow): boolean {
    return session.projectId === caller.project.id && session.env === envOf(caller) && session.expiresAt > clock.now();
  }

  async signOut(caller: Caller, token: string | undefined, origin?: Origin): Promise<void> {
    const { user, session } = await this.check(caller, token);
    const hash = sha256(token!);
    const revoked = await this.store.revokeSession(hash, clock.now());
    this.invalidator.publish(CHANNEL, hash);
    // Only the call that ended it reports it (two sign-outs racing).
    if (revoked) await this.events?.sessionRevoked(scopeOf(caller), { sessionId: session.id, userId: user.id, user }, 'sign_out', origin && clip(origin));
  }

  private remember<V>(map: Map<string, V>, key: string, value: V): void {
    if (map.size >= settings.sessionCacheMax) map.delete(map.keys().next().value!);
    map.set(key, value);
  }
}
