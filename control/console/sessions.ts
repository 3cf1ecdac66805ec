// The console's sessions: in control's memory only (a restart signs every operator out), keyed by
// the SHA-256 of the cookie's value so that a dump of this map gives no usable cookie. Each has an
// idle and an absolute lifetime on the one clock (core/clock.ts), and the map holds at most `cap`
// (the oldest dropped first), so a flood of sign-ins cannot grow memory without bound.
import crypto from 'node:crypto';
import { clock } from '../../core/clock.js';
import { safeEqual } from '../../core/crypto.js';

export interface ConsoleSession {
  /** The fingerprint of the admin token that opened it: the audit log's actor (operations/audit.ts). */
  actor: string;
  csrfToken: string;
  createdAt: number;
  lastSeenAt: number;
  /** createdAt + the absolute lifetime. */
  expiresAt: number;
}

export interface ConsoleSessionsOptions {
  idleMs: number;
  maxMs: number;
  cap?: number;
}

const hash = (cookie: string): string => crypto.createHash('sha256').update(cookie).digest('hex');
const randomToken = (): string => crypto.randomBytes(32).toString('base64url');

/** A cookie value as this module makes them (32 bytes, base64url): anything else is not looked up. */
const COOKIE_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export class ConsoleSessions {
  readonly idleMs: number;
  readonly maxMs: number;
  private readonly cap: number;
  /** Insertion order is creation order: the first key is the oldest session. */
  private readonly byHash = new Map<string, ConsoleSession>();

  constructor({ idleMs, maxMs, cap = 1000 }: ConsoleSessionsOptions) {
    this.idleMs = idleMs;
    this.maxMs = maxMs;
    this.cap = cap;
  }

  /** Opens a session; returns the cookie value (given to the browser once, never kept) and the session. */
  open(actor: string): { cookie: string; session: ConsoleSession } {
    const now = clock.now();
    const cookie = randomToken();
    const session: ConsoleSession = { actor, csrfToken: randomToken(), createdAt: now, lastSeenAt: now, expiresAt: now + this.maxMs };
    while (this.byHash.size >= this.cap) {
      const oldest = this.byHash.keys().next().value;
      if (oldest === undefined) break;
      this.byHash.delete(oldest);
    }
    this.byHash.set(hash(cookie), session);
    return { cookie, session };
  }

  /**
   * The live session of a cookie value, its idle time restarted (`touch`), or undefined: unknown,
   * idle too long, or past its absolute lifetime (a dead one is dropped as it is found).
   */
  find(cookie: string | undefined, touch = true): ConsoleSession | undefined {
    if (!cookie || !COOKIE_SHAPE.test(cookie)) return undefined;
    const key = hash(cookie);
    const s = this.byHash.get(key);
    if (!s) return undefined;
    const now = clock.now();
    if (now >= s.expiresAt || now - s.lastSeenAt >= this.idleMs) {
      this.byHash.delete(key);
      return undefined;
    }
    if (touch) s.lastSeenAt = now;
    return s;
  }

  /** Ends the session of a cookie value (sign-out); true if there was one. */
  close(cookie: string | undefined): boolean {
    if (!cookie || !COOKIE_SHAPE.test(cookie)) return false;
    return this.byHash.delete(hash(cookie));
  }

  /** When the session stops being accepted if nothing more is asked: the earlier of idle and absolute ends. */
  endsAt(s: ConsoleSession): number {
    return Math.min(s.expiresAt, s.lastSeenAt + this.idleMs);
  }

  get size(): number {
    return this.byHash.size;
  }
}

/** The request's CSRF header against the session's, in constant time; a missing or repeated header fails. */
export function csrfMatches(session: ConsoleSession, header: string | string[] | undefined): boolean {
  return typeof header === 'string' && header.length > 0 && safeEqual(header, session.csrfToken);
}

/** The cookie's name (contract: docs/console, /work/agents/console.md). */
export const COOKIE_NAME = 'postgate_console';

/** The value of our cookie in a Cookie header, or undefined (no cookie parser plugin for one name). */
export function cookieValue(header: string | undefined): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === COOKIE_NAME) return part.slice(eq + 1).trim();
  }
  return undefined;
}

// The session a request came with, set by the admin guard, read by the audit log (operations/audit.ts).
const attached = new WeakMap<object, ConsoleSession>();

export function attachSession(req: object, session: ConsoleSession): void {
  attached.set(req, session);
}

/** The console session the guard let this request through with; undefined for a bearer-token request. */
export function sessionOf(req: object): ConsoleSession | undefined {
  return attached.get(req);
}
