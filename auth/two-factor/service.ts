// Second factors (issue 41 item 2): TOTP (RFC 6238, totp.ts) and single-use backup codes, per project off,
// optional or required. The gate (gate.ts) holds a sign-in of a user who has a factor (or must enrol one)
// as a pending ticket; only the right factor turns the ticket into a session. Codes count against the
// ticket (5 tries), the user and the client's address, are compared in constant time, and never work
// twice: a TOTP step at or before the last one used is refused in the store, atomically, as is a spent
// backup code. Secrets are kept encrypted, backup codes as keyed hashes bound to the project,
// environment and user, tickets as SHA-256.
import crypto from 'node:crypto';
import QRCode from 'qrcode';
import { ApiError, invalid } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import type { Origin, PendingSignInRow, SignInStore, TwoFactorStore, UserRow } from '../../control/store/index.js';
import { randomToken, sha256, type AuthCrypto } from '../crypto.js';
import type { AuthEvents, EventScope } from '../events.js';
import type { Limiter } from '../limiter.js';
import type { ProjectAuthConfig, TwoFactorMode } from '../project-config.js';
import { isPending, type Admission, type OpenedSession, type PendingSignIn, type Sessions } from '../sessions.js';
import { durations, settings } from '../settings.js';
import { matchStep, newTotpSecret, otpauthUri } from './totp.js';

export type FactorMethod = 'totp' | 'backup_code';

/** What user management shows of a user's second factors. */
export interface TwoFactorStatus {
  /** A confirmed authenticator app. */
  totp: boolean;
  confirmedAt: number | null;
  backupCodesLeft: number;
}

/** What an authenticator app needs: the secret (typed by hand), its otpauth URI and that URI as a QR code. */
export interface TotpSetup {
  secret: string;
  otpauthUri: string;
  /** data:image/svg+xml;base64,… (an <img src> as it is). */
  qrCode: string;
}

export const BACKUP_CODE_COUNT = 10;
/** Lower-case letters and digits that cannot be misread for one another (no 0/o, 1/l/i). */
const BACKUP_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
const BACKUP_LENGTH = 10;
/** Code checks of one user per 10 minutes, over all of its tickets and the signed-in routes. */
const CHECKS_PER_USER_10_MIN = 20;

const unknownTicket = () => new ApiError('INVALID_CODE', 'Unknown or already used sign-in ticket: sign in again');

/** A new backup code: 10 characters (≈49 bits) from the CSPRNG, shown as xxxxx-xxxxx. */
function newBackupCode(): string {
  let s = '';
  for (let i = 0; i < BACKUP_LENGTH; i++) s += BACKUP_ALPHABET[crypto.randomInt(BACKUP_ALPHABET.length)];
  return `${s.slice(0, 5)}-${s.slice(5)}`;
}

/** A backup code as typed (any case, dashes, spaces) in its one stored form; undefined when it cannot be one. */
function normalBackupCode(input: string): string | undefined {
  const c = input.replace(/[\s-]/g, '').toLowerCase();
  return c.length === BACKUP_LENGTH && [...c].every((ch) => BACKUP_ALPHABET.includes(ch)) ? c : undefined;
}

export interface TwoFactorDeps {
  store: TwoFactorStore;
  users: SignInStore;
  crypto: AuthCrypto;
  projects: ProjectAuthConfig;
  sessions: Sessions;
  events: AuthEvents;
  limiter: Limiter;
}

export class TwoFactorService {
  constructor(private readonly d: TwoFactorDeps) {}

  async mode(projectId: string): Promise<TwoFactorMode> {
    return (await this.d.projects.settings(projectId)).twoFactor;
  }

  // ------------------------------------------------------------ the gate

  /** Holds a sign-in that has not given a second factor when the project and the user call for one. */
  async admit(a: Admission): Promise<PendingSignIn | undefined> {
    if (a.secondFactor) return undefined;
    const mode = await this.mode(a.scope.projectId);
    if (mode === 'off') return undefined;
    const enrolled = (await this.d.store.totp(a.user.id))?.confirmedAt != null;
    if (!enrolled && mode === 'optional') return undefined;
    const methods: FactorMethod[] = enrolled ? ['totp', ...((await this.d.store.backupCodesLeft(a.user.id)) > 0 ? (['backup_code'] as const) : [])] : [];
    const ticket = randomToken('pgp_');
    const expiresAt = clock.now() + settings.pendingSignInTtlMs;
    await this.d.store.putPending({
      ticketHash: sha256(ticket),
      projectId: a.scope.projectId,
      env: a.scope.env,
      userId: a.user.id,
      provider: a.session.provider,
      ip: a.origin.ip,
      userAgent: a.origin.userAgent,
      sessionTtlMs: a.session.expiresAt - a.session.createdAt,
      enrol: !enrolled,
      expiresAt,
    });
    return { pending: 'two_factor', user: a.user, ticket, methods, enrol: !enrolled, expiresAt };
  }

  // ------------------------------------------------------------ limits

  /** Counts one code check against the client's address (the same budget as email and SMS codes) and the user. */
  private count(scope: EventScope, ip: string, userId?: string): void {
    this.d.limiter.take(
      `auth:verify-ip:${scope.projectId}:${scope.env}:${ip}`,
      settings.codeVerifiesPerIp10Min,
      10 * durations.MINUTE,
      (s) => `Too many code checks from this address; try again in ${s} s`,
    );
    if (userId)
      this.d.limiter.take(
        `auth:2fa-user:${userId}`,
        CHECKS_PER_USER_10_MIN,
        10 * durations.MINUTE,
        (s) => `Too many second-factor codes for this account; try again in ${s} s`,
      );
  }

  // ------------------------------------------------------------ pending sign-ins

  /** Counts a try against the ticket; its row, or the refusal of a missing, expired or dead one. */
  private async attempt(scope: EventScope, ticket: string): Promise<PendingSignInRow> {
    const r = await this.d.store.attemptPending(sha256(ticket), scope.projectId, scope.env, clock.now(), settings.codeMaxAttempts);
    switch (r.status) {
      case 'ok':
        return r.pending;
      case 'expired':
        throw new ApiError('CODE_EXPIRED', 'This sign-in waited too long for its second factor: sign in again');
      case 'locked':
        throw new ApiError('TOO_MANY_ATTEMPTS', 'Too many wrong codes for this sign-in: sign in again');
      default:
        throw unknownTicket();
    }
  }

  private wrong(p: PendingSignInRow): ApiError {
    return p.attempts >= settings.codeMaxAttempts
      ? new ApiError('TOO_MANY_ATTEMPTS', 'Too many wrong codes for this sign-in: sign in again')
      : new ApiError('INVALID_CODE', 'The code is not valid');
  }

  /** The held sign-in's session, once the ticket is taken (a ticket works once). */
  private async open(scope: EventScope, hash: string, p: PendingSignInRow): Promise<OpenedSession> {
    if (!(await this.d.store.takePending(hash))) throw unknownTicket();
    const s = await this.d.sessions.openFor(scope, p.userId, p.provider, { ip: p.ip, userAgent: p.userAgent }, p.sessionTtlMs, true);
    // The gates that follow a second factor refuse (a ban) or pass; none holds it again.
    if (isPending(s)) throw unknownTicket();
    return s;
  }

  /** Finishes a held sign-in with a TOTP or backup code. */
  async verify(scope: EventScope, ticket: string, code: string, method: FactorMethod | undefined, origin: Origin & { ip: string }): Promise<OpenedSession> {
    this.count(scope, origin.ip);
    const p = await this.attempt(scope, ticket);
    if (p.enrol) throw invalid('This sign-in must enrol a second factor first: POST /api/v1/auth/two-factor/enrol');
    this.count(scope, origin.ip, p.userId);
    const used = await this.check(scope, p.userId, code, method);
    if (!used) throw this.wrong(p);
    const s = await this.open(scope, sha256(ticket), p);
    await this.d.events.account(scope, 'two_factor.used', {
      user: s.user,
      userId: s.user.id,
      sessionId: s.session.id,
      provider: p.provider,
      origin,
      details: { method: used },
    });
    return s;
  }

  /** Enrolment under a held sign-in (the project requires a second factor and the user has none): a new secret. */
  async enrolStart(scope: EventScope, ticket: string, issuer: string): Promise<TotpSetup> {
    const r = await this.d.store.pending(sha256(ticket), scope.projectId, scope.env, clock.now());
    if (r.status === 'expired') throw new ApiError('CODE_EXPIRED', 'This sign-in waited too long for its second factor: sign in again');
    if (r.status !== 'ok') throw unknownTicket();
    if (r.pending.attempts >= settings.codeMaxAttempts) throw new ApiError('TOO_MANY_ATTEMPTS', 'Too many wrong codes for this sign-in: sign in again');
    if (!r.pending.enrol) throw invalid('This user has a second factor: finish the sign-in with POST /api/v1/auth/two-factor/verify');
    const user = await this.d.users.userById(r.pending.userId);
    if (!user) throw unknownTicket();
    return this.setup(user, issuer);
  }

  /** The first code of the app enrolled under a held sign-in: the factor is on, the session opens, the backup codes are shown (once). */
  async enrolConfirm(
    scope: EventScope,
    ticket: string,
    code: string,
    origin: Origin & { ip: string },
  ): Promise<{ opened: OpenedSession; backupCodes: string[] }> {
    this.count(scope, origin.ip);
    const p = await this.attempt(scope, ticket);
    if (!p.enrol) throw invalid('This user has a second factor: finish the sign-in with POST /api/v1/auth/two-factor/verify');
    this.count(scope, origin.ip, p.userId);
    const backupCodes = await this.confirmFirst(scope, p.userId, code);
    if (!backupCodes) throw this.wrong(p);
    const s = await this.open(scope, sha256(ticket), p);
    await this.d.events.account(scope, 'two_factor.enabled', {
      user: s.user,
      userId: s.user.id,
      sessionId: s.session.id,
      provider: p.provider,
      origin,
      details: { method: 'totp' },
    });
    return { opened: s, backupCodes };
  }

  // ------------------------------------------------------------ the factors

  /** A new unconfirmed secret for the user (a previous unconfirmed one is replaced). */
  private async setup(user: UserRow, issuer: string): Promise<TotpSetup> {
    const secret = newTotpSecret();
    if (!(await this.d.store.startTotp(user.id, this.d.crypto.encrypt(secret), clock.now()))) {
      throw invalid('Two-factor is already on for this user: remove it first to set up another app');
    }
    const uri = otpauthUri({ issuer, account: user.email ?? user.phone ?? user.username ?? user.id, secret });
    const svg = await QRCode.toString(uri, { type: 'svg', margin: 1, errorCorrectionLevel: 'M' });
    return { secret, otpauthUri: uri, qrCode: `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}` };
  }

  /** Confirms the waiting secret with its first code; the new backup codes, or undefined for a wrong code. */
  private async confirmFirst(scope: EventScope, userId: string, code: string): Promise<string[] | undefined> {
    const t = await this.d.store.totp(userId);
    if (!t) throw invalid('No authenticator app is being set up: start with the setup call');
    if (t.confirmedAt !== null) throw invalid('Two-factor is already on for this user');
    const step = matchStep(this.d.crypto.decrypt(t.secret), code.trim(), clock.now());
    if (step === undefined) return undefined;
    const codes = Array.from({ length: BACKUP_CODE_COUNT }, newBackupCode);
    const ok = await this.d.store.confirmTotp(
      userId,
      t.secret,
      step,
      clock.now(),
      codes.map((c) => this.backupHash(scope, userId, normalBackupCode(c)!)),
    );
    return ok ? codes : undefined;
  }

  private backupHash(scope: EventScope, userId: string, normal: string): string {
    return this.d.crypto.codeHash(normal, scope.projectId, scope.env, userId, 'backup_code');
  }

  /**
   * Checks and spends a code of a user's confirmed factor: a TOTP code (its step recorded: never again, nor an
   * earlier one) or a backup code (spent). Without `method`, six digits are a TOTP code, anything else a backup
   * code. The method that took it, or undefined.
   */
  private async check(scope: EventScope, userId: string, code: string, method?: FactorMethod): Promise<FactorMethod | undefined> {
    const typed = code.trim();
    const m = method ?? (/^\d{6}$/.test(typed) ? 'totp' : 'backup_code');
    const t = await this.d.store.totp(userId);
    if (!t?.confirmedAt) return undefined;
    if (m === 'totp') {
      const step = matchStep(this.d.crypto.decrypt(t.secret), typed, clock.now());
      return step !== undefined && (await this.d.store.useTotpStep(userId, step)) ? 'totp' : undefined;
    }
    const normal = normalBackupCode(typed);
    return normal && (await this.d.store.useBackupCode(userId, this.backupHash(scope, userId, normal), clock.now())) ? 'backup_code' : undefined;
  }

  // ------------------------------------------------------------ a signed-in user's own factors

  async status(userId: string): Promise<TwoFactorStatus> {
    const t = await this.d.store.totp(userId);
    if (!t?.confirmedAt) return { totp: false, confirmedAt: null, backupCodesLeft: 0 };
    return { totp: true, confirmedAt: t.confirmedAt, backupCodesLeft: await this.d.store.backupCodesLeft(userId) };
  }

  /** Starts enrolment of an authenticator app (unconfirmed until its first code). */
  totpSetup(user: UserRow, issuer: string): Promise<TotpSetup> {
    return this.setup(user, issuer);
  }

  /** The first code: two-factor is on; the backup codes (shown once). */
  async totpConfirm(scope: EventScope, user: UserRow, sessionId: string, code: string, origin: Origin & { ip: string }): Promise<string[]> {
    this.count(scope, origin.ip, user.id);
    const codes = await this.confirmFirst(scope, user.id, code);
    if (!codes) throw new ApiError('INVALID_CODE', 'The code is not valid');
    this.d.sessions.forgetUser(user.id);
    await this.d.events.account(scope, 'two_factor.enabled', {
      user,
      userId: user.id,
      sessionId,
      provider: user.provider,
      origin,
      details: { method: 'totp' },
    });
    return codes;
  }

  /** New backup codes (the old ones are void), against a current code. */
  async regenerateBackupCodes(scope: EventScope, user: UserRow, code: string, origin: Origin & { ip: string }): Promise<string[]> {
    this.count(scope, origin.ip, user.id);
    await this.enrolled(user.id);
    if (!(await this.check(scope, user.id, code))) throw new ApiError('INVALID_CODE', 'The code is not valid');
    const codes = Array.from({ length: BACKUP_CODE_COUNT }, newBackupCode);
    await this.d.store.replaceBackupCodes(
      user.id,
      codes.map((c) => this.backupHash(scope, user.id, normalBackupCode(c)!)),
      clock.now(),
    );
    return codes;
  }

  /** Turns the user's second factor off, against a current code; refused when the project requires one. */
  async disable(scope: EventScope, user: UserRow, sessionId: string, code: string, origin: Origin & { ip: string }): Promise<void> {
    if ((await this.mode(scope.projectId)) === 'required') throw invalid('This project requires a second factor: it cannot be removed');
    this.count(scope, origin.ip, user.id);
    await this.enrolled(user.id);
    const used = await this.check(scope, user.id, code);
    if (!used) throw new ApiError('INVALID_CODE', 'The code is not valid');
    if (await this.d.store.removeTotp(user.id)) {
      this.d.sessions.forgetUser(user.id);
      await this.d.events.account(scope, 'two_factor.disabled', {
        user,
        userId: user.id,
        sessionId,
        provider: user.provider,
        origin,
        details: { method: used },
      });
    }
  }

  private async enrolled(userId: string): Promise<void> {
    if ((await this.d.store.totp(userId))?.confirmedAt == null) throw invalid('Two-factor is not on for this user');
  }

  // ------------------------------------------------------------ for user management (auth/users)

  /** A user's second factors; nothing for a user that is not the scope's (another project's ids see nothing). */
  async statusForUser(scope: EventScope, userId: string): Promise<TwoFactorStatus> {
    const user = await this.d.users.userById(userId);
    if (!user || user.projectId !== scope.projectId || user.env !== scope.env) return { totp: false, confirmedAt: null, backupCodesLeft: 0 };
    return this.status(userId);
  }

  /**
   * An operator (or the project's backend) removes a user's second factors: the authenticator app and the
   * backup codes; `two_factor.disabled` (reason operator_reset). True when there was something to remove.
   */
  async resetForUser(scope: EventScope, userId: string): Promise<boolean> {
    const user = await this.d.users.userById(userId);
    if (!user || user.projectId !== scope.projectId || user.env !== scope.env) return false;
    const removed = await this.d.store.removeTotp(userId);
    if (removed) {
      this.d.sessions.forgetUser(userId);
      await this.d.events.account(scope, 'two_factor.disabled', { user, userId, reason: 'operator_reset' });
    }
    return removed;
  }

  /** Drops expired tickets. */
  prune(): Promise<void> {
    return this.d.store.prune(clock.now());
  }
}
