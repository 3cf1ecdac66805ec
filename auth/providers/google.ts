// Google: OAuth (OpenID Connect code flow) and One Tap / Sign-In button id_tokens.
import { verifyIdToken } from '../id-token.js';
import { claimsProfile } from './oidc.js';
import type { ProviderConfig, ProviderDef } from './types.js';

const ISSUER = 'https://accounts.google.com';

/** Google is authoritative for Gmail addresses and for Workspace (`hd`) accounts, nothing else. */
function authoritative(claims: Record<string, unknown>): boolean {
  const email = typeof claims.email === 'string' ? claims.email.toLowerCase() : '';
  return claims.email_verified === true && (email.endsWith('@gmail.com') || (typeof claims.hd === 'string' && email.endsWith(`@${claims.hd.toLowerCase()}`)));
}

// Google's tokens name their issuer either way; an overridden issuer is taken exactly.
const issuers = (cfg: ProviderConfig) => (cfg.endpoints.issuer === ISSUER ? [ISSUER, 'accounts.google.com'] : [cfg.endpoints.issuer!]);

export const google: ProviderDef = {
  id: 'google',
  name: 'Google',
  methods: ['oauth', 'id_token'],
  defaults: {
    authorizationUrl: 'https://accounts.google.com/o/oauth2/v2/auth',
    tokenUrl: 'https://oauth2.googleapis.com/token',
    jwksUrl: 'https://www.googleapis.com/oauth2/v3/certs',
    issuer: ISSUER,
  },
  requires: { oauth: ['clientId', 'clientSecret'], id_token: ['clientId'] },
  oauth: {
    oidc: true,
    scope: 'openid email profile',
    clientAuth: 'post',
    profile: async (_cfg, t) => claimsProfile(t.claims!, authoritative(t.claims!)),
  },
  verify: {
    id_token: async (cfg, credential, { nonce }) => {
      const claims = await verifyIdToken(credential, {
        jwksUrl: cfg.endpoints.jwksUrl!,
        issuers: issuers(cfg),
        audience: cfg.clientId!,
        nonce,
        algorithms: ['RS256'],
      });
      return claimsProfile(claims, authoritative(claims));
    },
  },
};
