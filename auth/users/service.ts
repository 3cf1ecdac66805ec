// User management (issue 41): the project's backend (a `users`-scope key) and the operator (admin API, CLI)
// list and search a project's users, read one with its identities and live sessions, update its verified
// flags, name and metadata, ban and unban it, delete it, and end its sessions. Every call is scoped by
// project and environment: an id of another project or environment answers the same 404 as an unknown one.
// Each change is an auth event (audit log and webhooks).
import { ApiError, invalid, notFound } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import type { IdentityRow, ManagedUser, SessionRow, UserAdmin, UserChanges, UserQuery, UserRow } from '../../control/store/index.js';
import type { AuthEvents, EventScope } from '../events.js';
import type { Sessions } from '../sessions.js';
import { BanGate, banned } from './gate.js';

/** The app's metadata of a user, as JSON, at most this many bytes. */
export const METADATA_MAX_BYTES = 16 * 1024;

export interface UserDetail {
  managed: ManagedUser;
  identities: IdentityRow[];
  sessions: SessionRow[];
}

const noUser = () => notFound('No user with this id');

export class UserManagement {
  /** The sign-in gate of bans (registered before the second factor's). */
  readonly gate: BanGate;

  constructor(private readonly d: { store: UserAdmin; sessions: Sessions; events: AuthEvents }) {
    this.gate = new BanGate(d.store);
  }

  async list(scope: EventScope, q: UserQuery): Promise<{ users: ManagedUser[]; hasMore: boolean }> {
    if (q.subject !== undefined && q.provider === undefined) throw invalid('subject needs provider');
    const page = await this.d.store.list(scope.projectId, scope.env, q);
    if (!page) throw invalid('after names no user of this project and environment');
    return page;
  }

  async get(scope: EventScope, userId: string): Promise<ManagedUser> {
    const m = await this.d.store.get(scope.projectId, scope.env, userId);
    if (!m) throw noUser();
    return m;
  }

  async detail(scope: EventScope, userId: string): Promise<UserDetail> {
    const managed = await this.get(scope, userId);
    const [identities, sessions] = await Promise.all([
      this.d.store.identities(scope.projectId, scope.env, userId),
      this.d.store.liveSessions(scope.projectId, scope.env, userId, clock.now()),
    ]);
    return { managed, identities, sessions };
  }

  async update(scope: EventScope, userId: string, c: UserChanges): Promise<ManagedUser> {
    if (c.metadata !== undefined) {
      const bytes = Buffer.byteLength(JSON.stringify(c.metadata));
      if (bytes > METADATA_MAX_BYTES) throw invalid(`metadata is ${bytes} bytes as JSON; at most ${METADATA_MAX_BYTES}`);
    }
    const before = await this.get(scope, userId);
    if (c.emailVerified && !before.user.email) throw invalid('The user has no email to verify');
    if (c.phoneVerified && !before.user.phone) throw invalid('The user has no phone number to verify');
    const after = await this.d.store.update(scope.projectId, scope.env, userId, c);
    if (after === 'conflict') throw new ApiError('CONFLICT', 'Another user of this environment has this email verified');
    if (!after) throw noUser();
    // Cached sessions carry the user (GET /session answers its name and verified flag).
    this.d.sessions.forgetUser(userId);
    const changed = [
      ...(c.emailVerified !== undefined ? ['email_verified'] : []),
      ...(c.phoneVerified !== undefined ? ['phone_verified'] : []),
      ...(c.name !== undefined ? ['name'] : []),
      ...(c.metadata !== undefined ? ['metadata'] : []),
    ];
    await this.d.events.account(scope, 'user.updated', { user: after.user, userId, details: { changed } });
    return after;
  }

  /** Bans the user (until `until`, or until lifted) and ends its live sessions at once, on every node. */
  async ban(scope: EventScope, userId: string, reason: string, until: number | null): Promise<ManagedUser> {
    const now = clock.now();
    if (until !== null && until <= now) throw invalid('until must be in the future');
    const m = await this.d.store.ban(scope.projectId, scope.env, userId, { bannedAt: now, reason, expiresAt: until });
    if (!m) throw noUser();
    // Read after the ban is stored: a session a racing sign-in opens later meets the gate.
    await this.endSessions(scope, userId, 'user_banned', m.user);
    this.d.sessions.forgetUser(userId);
    await this.d.events.account(scope, 'user.banned', {
      user: m.user,
      userId,
      reason,
      details: { banned_until: until === null ? null : new Date(until).toISOString() },
    });
    return m;
  }

  async unban(scope: EventScope, userId: string): Promise<ManagedUser> {
    const before = await this.get(scope, userId);
    const m = await this.d.store.unban(scope.projectId, scope.env, userId);
    if (!m) throw noUser();
    this.d.sessions.forgetUser(userId);
    // Only a ban still in force is lifted (an ended one is cleared silently).
    if (banned(before.ban)) await this.d.events.account(scope, 'user.unbanned', { user: m.user, userId });
    return m;
  }

  /**
   * Deletes the user's personal data: its sessions end first (every node's cache drops them), then one
   * store transaction removes the rest. The user.deleted entry names only the id.
   */
  async delete(scope: EventScope, userId: string): Promise<void> {
    await this.get(scope, userId);
    await this.endSessions(scope, userId, 'user_deleted');
    const gone = await this.d.store.delete(scope.projectId, scope.env, userId, clock.now());
    if (!gone) throw noUser();
    // A session opened meanwhile was deleted with the rest: with its user gone from every cache, it checks invalid.
    this.d.sessions.forgetUser(userId);
    await this.d.events.account(scope, 'user.deleted', { userId });
  }

  async sessions(scope: EventScope, userId: string): Promise<SessionRow[]> {
    await this.get(scope, userId);
    return this.d.store.liveSessions(scope.projectId, scope.env, userId, clock.now());
  }

  async revokeSession(scope: EventScope, userId: string, sessionId: string): Promise<void> {
    const m = await this.get(scope, userId);
    const live = await this.d.store.liveSessions(scope.projectId, scope.env, userId, clock.now());
    if (!live.some((s) => s.id === sessionId)) throw notFound('No live session with this id');
    if (!(await this.d.sessions.revokeById(scope, { sessionId, userId, user: m.user }, 'admin'))) throw notFound('No live session with this id');
  }

  /** Ends every live session of the user; returns how many. */
  async revokeSessions(scope: EventScope, userId: string): Promise<number> {
    const m = await this.get(scope, userId);
    return this.endSessions(scope, userId, 'admin', m.user);
  }

  /** `user` names the user in the session.revoked events (not for a user being deleted). */
  private async endSessions(scope: EventScope, userId: string, reason: string, user?: UserRow): Promise<number> {
    const live = await this.d.store.liveSessions(scope.projectId, scope.env, userId, clock.now());
    let ended = 0;
    for (const s of live) if (await this.d.sessions.revokeById(scope, { sessionId: s.id, userId, ...(user ? { user } : {}) }, reason)) ended++;
    return ended;
  }
}
