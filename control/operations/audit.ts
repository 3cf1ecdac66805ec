// The operator audit log's writer: every change made through the admin API says what, on what,
// when, how many emails, and who: a fingerprint of the admin token (never the token itself).
import crypto from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { clock } from '../../core/clock.js';
import { prefixedId } from '../../core/ids.js';
import type { Store } from '../store/index.js';
import { sessionOf } from '../console/sessions.js';

/** The first 12 hex digits of the token's SHA-256: tells tokens apart in the log, gives nothing of them away. */
export const tokenFingerprint = (token: string): string => crypto.createHash('sha256').update(token).digest('hex').slice(0, 12);

/**
 * Who made an admin request: the fingerprint of the token it carried (the guard has checked it already),
 * or for a console request the fingerprint of the token that opened its session.
 */
export function actorOf(req: FastifyRequest): string {
  const session = sessionOf(req);
  if (session) return session.actor;
  const auth = req.headers.authorization ?? '';
  return tokenFingerprint(auth.startsWith('Bearer ') ? auth.slice(7) : auth);
}

export interface AuditAction {
  action: string;
  target: string;
  details?: Record<string, unknown>;
  emails?: number | null;
}

/** Appends an entry for a change an admin request made (after it took effect). */
export function audit(store: Store, req: FastifyRequest, a: AuditAction): Promise<void> {
  return store.operations.audit({
    id: prefixedId('op'),
    at: clock.now(),
    action: a.action,
    actor: actorOf(req),
    target: a.target,
    // A change made in the console says so (the actor alone cannot: the same token signs the CLI in).
    details: sessionOf(req) ? { ...a.details, via: 'console' } : (a.details ?? {}),
    emails: a.emails ?? null,
  });
}
