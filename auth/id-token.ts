// id_tokens handed to us by a client SDK (Google One Tap, Telegram Login,
// another OpenID issuer): signature against the issuer's JWKS, asymmetric
// algorithms only, iss, aud = the project's client id, exp/nbf on our clock,
// nonce when the app gives one.
import { createRemoteJWKSet, jwtVerify, errors, type JWTPayload } from 'jose';
import { clock } from '../core/clock.js';
import { settings } from './settings.js';
import { CredentialError } from './providers/types.js';

const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'EdDSA'];
const keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

function keySet(jwksUrl: string): ReturnType<typeof createRemoteJWKSet> {
  let set = keySets.get(jwksUrl);
  if (!set) {
    // jose caches the keys and refetches on an unknown kid (key rotation), at most every 30 s.
    set = createRemoteJWKSet(new URL(jwksUrl), { timeoutDuration: settings.providerTimeoutMs });
    keySets.set(jwksUrl, set);
  }
  return set;
}

export interface IdTokenCheck {
  jwksUrl: string;
  issuers: string[];
  audience: string;
  nonce?: string;
  algorithms?: string[];
}

export async function verifyIdToken(jwt: string, check: IdTokenCheck): Promise<JWTPayload> {
  try {
    const { payload } = await jwtVerify(jwt, keySet(check.jwksUrl), {
      issuer: check.issuers,
      audience: check.audience,
      algorithms: check.algorithms ?? ALGORITHMS,
      currentDate: clock.date(),
      clockTolerance: settings.jwtClockToleranceSec,
      requiredClaims: ['sub', 'exp', 'iat'],
    });
    if (check.nonce !== undefined && payload.nonce !== check.nonce) throw new CredentialError('id_token nonce does not match');
    return payload;
  } catch (err) {
    if (err instanceof CredentialError) throw err;
    if (err instanceof errors.JWTExpired) throw new CredentialError('id_token has expired');
    if (err instanceof errors.JWTClaimValidationFailed) throw new CredentialError(`id_token ${err.claim} check failed`);
    if (err instanceof errors.JOSEError) throw new CredentialError(`id_token rejected: ${err.code}`);
    throw new CredentialError('id_token could not be verified');
  }
}
