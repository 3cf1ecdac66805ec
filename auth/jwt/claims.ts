// What a project's JWT says: who (sub), for which project and environment, from which session and provider,
// for whom (aud), and until when: the project's lifetime (at most jwtMaxTtlSeconds), never past the session.
import crypto from 'node:crypto';
import type { Env, SessionRow } from '../../control/store/index.js';
import { settings } from '../settings.js';

export interface TokenClaims {
  [claim: string]: unknown;
  iss: string;
  sub: string;
  aud: string;
  project: string;
  project_id: string;
  sid: string;
  provider: string;
  env: Env;
  iat: number;
  nbf: number;
  exp: number;
  jti: string;
}

export interface ClaimsInput {
  issuer: string;
  audience: string;
  ttlMs: number;
  now: number;
  project: { id: string; slug: string };
  session: Pick<SessionRow, 'id' | 'userId' | 'provider' | 'env' | 'expiresAt'>;
}

/** The claims and the expiry (ms) of a token issued at `now`. */
export function tokenClaims(i: ClaimsInput): { claims: TokenClaims; expiresAt: number } {
  const ttl = Math.min(i.ttlMs, settings.jwtMaxTtlSeconds * 1000);
  const iat = Math.floor(i.now / 1000);
  // Whole seconds, rounded down: never a second past the session.
  const exp = Math.max(iat, Math.floor(Math.min(i.now + ttl, i.session.expiresAt) / 1000));
  return {
    claims: {
      iss: i.issuer,
      sub: i.session.userId,
      aud: i.audience,
      project: i.project.slug,
      project_id: i.project.id,
      sid: i.session.id,
      provider: i.session.provider,
      env: i.session.env,
      iat,
      nbf: iat,
      exp,
      jti: crypto.randomUUID(),
    },
    expiresAt: exp * 1000,
  };
}
