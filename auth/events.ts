// Sign-in events: user.created, session.created, session.revoked and sign_in.failed. Each is
// appended to the project's audit log and, in the same write, queued for the project's webhook
// endpoints that list its type (delivered, signed and retried like mail's webhook messages).
// Neither ever carries a code, token or secret: ids, a reason, the client's address and agent,
// and email addresses (masked in the audit log, which outlives sessions for its retention; whole
// in webhooks about a known user, whose project holds the address anyway; masked in
// sign_in.failed, which names whatever address was typed). sign_in.failed is rate-limited per
// project, environment and reason, so a script hammering codes floods neither the log nor a
// receiver: what is left out is counted in the next one let through (`suppressed`).
import { ApiError, type ErrorCode } from '../core/errors.js';
import { DAY_MS, clock } from '../core/clock.js';
import { prefixedId } from '../core/ids.js';
import type { Logger } from '../core/log.js';
import type { AuditEntry, AuditLog, AuthEventType, Env, Origin, SessionRow, UserRow } from '../control/store/index.js';
import type { Limiter } from './limiter.js';

/** A project's environment: where an event happened. */
export interface EventScope {
  projectId: string;
  env: Env;
}

/** Who tried to sign in, as far as the attempt says. */
export interface Attempt {
  email?: string | null;
  phone?: string | null;
  provider?: string | null;
}

/** sign_in.failed recorded per project, environment and reason per minute, at most (over every node when Redis shares the counters). */
export const FAILED_PER_MINUTE = 30;

/** The refusals that are failed sign-ins, by the reason they are recorded with. Others (bad input, a database away) are not. */
const REASONS: Partial<Record<ErrorCode, string>> = {
  INVALID_CODE: 'invalid_code',
  CODE_EXPIRED: 'code_expired',
  TOO_MANY_ATTEMPTS: 'too_many_attempts',
  RATE_LIMIT_EXCEEDED: 'rate_limited',
  INVALID_CREDENTIAL: 'invalid_credential',
  REGION_NOT_ALLOWED: 'region_not_allowed',
  PROVIDER_NOT_ENABLED: 'provider_not_enabled',
  USER_BANNED: 'user_banned',
};

/** j***@example.com: the domain and a first letter, enough to see a pattern, not to read the list. */
export function maskEmail(address: string): string {
  const at = address.lastIndexOf('@');
  return at < 1 ? '***' : `${address[0]}***${address.slice(at)}`;
}

/** +79*******67. */
export function maskPhone(phone: string): string {
  return phone.length <= 6 ? '***' : `${phone.slice(0, 3)}${'*'.repeat(phone.length - 5)}${phone.slice(-2)}`;
}

const none: Origin = { ip: null, userAgent: null };

export class AuthEvents {
  /** Failures left out since the last one recorded, per rate-limit key. */
  private readonly suppressed = new Map<string, number>();

  constructor(private readonly d: { audit: AuditLog; limiter: Limiter; log: Logger }) {}

  /** A user that did not exist before this sign-in. */
  userCreated(scope: EventScope, user: UserRow, origin: Origin): Promise<void> {
    return this.emit(scope, 'user.created', { user, provider: user.provider, origin });
  }

  /** A session opened (by a token sign-in, or by exchanging an OAuth or hosted svc_code). */
  sessionCreated(scope: EventScope, user: UserRow, session: SessionRow): Promise<void> {
    return this.emit(scope, 'session.created', {
      user,
      sessionId: session.id,
      provider: session.provider,
      origin: { ip: session.ip, userAgent: session.userAgent },
    });
  }

  /** A session ended before its time: `sign_out`, or `code_reused` (its svc_code was used again: leaked). */
  sessionRevoked(scope: EventScope, s: { sessionId: string; userId: string; user?: UserRow }, reason: string, origin: Origin = none): Promise<void> {
    return this.emit(scope, 'session.revoked', { user: s.user, userId: s.userId, sessionId: s.sessionId, reason, origin });
  }

  /**
   * An account change of issue 41 (user management, passkeys, two-factor, magic links): an audit entry and
   * its webhook message. `details` (snake_case keys; never a secret, code or token) go in the webhook's
   * data only; `reason` is kept in the audit entry too. Without `user` (a deleted one) no address is written.
   */
  account(
    scope: EventScope,
    type: Exclude<AuthEventType, 'user.created' | 'session.created' | 'session.revoked' | 'sign_in.failed'>,
    e: { user?: UserRow; userId?: string; sessionId?: string; provider?: string | null; reason?: string; origin?: Origin; details?: Record<string, unknown> },
  ): Promise<void> {
    return this.emit(scope, type, { ...e, provider: e.provider ?? null, origin: e.origin ?? none });
  }

  /** A refused sign-in, rate-limited per project, environment and reason. */
  async signInFailed(scope: EventScope, attempt: Attempt, reason: string, origin: Origin = none): Promise<void> {
    const key = `audit:failed:${scope.projectId}:${scope.env}:${reason}`;
    try {
      this.d.limiter.take(key, FAILED_PER_MINUTE, 60_000, () => 'sign_in.failed events rate-limited');
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      this.suppressed.set(key, (this.suppressed.get(key) ?? 0) + 1);
      return;
    }
    const suppressed = this.suppressed.get(key) ?? 0;
    this.suppressed.delete(key);
    await this.emit(scope, 'sign_in.failed', { attempt, provider: attempt.provider ?? null, reason, origin, suppressed });
  }

  /**
   * Runs one sign-in step; a refusal that is a failed sign-in (a wrong, expired or used code, a bad
   * credential, a limit…) is recorded before it goes on to the caller.
   */
  async watch<T>(scope: EventScope, attempt: Attempt, origin: Origin, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err) {
      const reason = err instanceof ApiError ? REASONS[err.code] : undefined;
      if (reason) await this.signInFailed(scope, attempt, reason, origin);
      throw err;
    }
  }

  /** Deletes entries older than the retention; control calls it now and then. */
  async prune(retentionDays: number): Promise<void> {
    const n = await this.d.audit.prune(clock.now() - retentionDays * DAY_MS);
    if (n) this.d.log.info({ deleted: n, retentionDays }, 'auth audit log pruned');
  }

  /** Never fails the sign-in it reports: a lost event is logged (without the person's details). */
  private async emit(
    scope: EventScope,
    type: AuthEventType,
    e: {
      user?: UserRow | undefined;
      userId?: string;
      sessionId?: string;
      attempt?: Attempt;
      provider?: string | null;
      reason?: string;
      origin: Origin;
      suppressed?: number;
      details?: Record<string, unknown>;
    },
  ): Promise<void> {
    const email = e.user ? e.user.email : (e.attempt?.email ?? null);
    const phone = e.user ? e.user.phone : (e.attempt?.phone ?? null);
    const entry: AuditEntry = {
      id: prefixedId('evt'),
      projectId: scope.projectId,
      env: scope.env,
      type,
      userId: e.user?.id ?? e.userId ?? null,
      sessionId: e.sessionId ?? null,
      email: email && maskEmail(email),
      phone: phone && maskPhone(phone),
      provider: e.provider ?? null,
      ip: e.origin.ip,
      // As sessions keep it: a header can be kilobytes long.
      userAgent: e.origin.userAgent?.slice(0, 512) ?? null,
      reason: e.reason ?? null,
      suppressed: e.suppressed ?? 0,
      at: clock.now(),
    };
    // Whole addresses only for a known user (see the top of the file).
    const data: Record<string, unknown> = {
      id: entry.id,
      env: entry.env,
      user_id: entry.userId,
      session_id: entry.sessionId,
      email: e.user ? email : entry.email,
      phone: e.user ? phone : entry.phone,
      provider: entry.provider,
      ip: entry.ip,
      user_agent: entry.userAgent,
      reason: entry.reason,
      ...(type === 'sign_in.failed' ? { suppressed: entry.suppressed } : {}),
      ...e.details,
      created_at: new Date(entry.at).toISOString(),
    };
    try {
      await this.d.audit.record(entry, data);
    } catch (err) {
      this.d.log.error({ err: (err as Error).message, project: scope.projectId, type }, 'auth event not recorded');
    }
  }
}
