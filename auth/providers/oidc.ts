// OpenID Connect providers: claims → profile, discovery for a configured
// issuer, and the generic `oidc` provider (any issuer the project configures).
import * as oauth from 'oauth4webapi';
import { settings } from '../settings.js';
import { verifyIdToken } from '../id-token.js';
import { CredentialError, str, type Endpoints, type Profile, type ProviderConfig, type ProviderDef } from './types.js';

/** Profile from id_token (and userinfo) claims; the email links accounts only when `authoritative`. */
export function claimsProfile(claims: Record<string, unknown>, authoritative: boolean): Profile {
  const email = str(claims.email)?.toLowerCase() ?? null;
  return {
    subject: String(claims.sub),
    email,
    emailVerified: !!email && authoritative && claims.email_verified === true,
    name: str(claims.name),
    avatarUrl: str(claims.picture),
    phone: str(claims.phone_number),
    username: str(claims.preferred_username),
  };
}

const discovered = new Map<string, { at: number; as: oauth.AuthorizationServer }>();
const DISCOVERY_TTL_MS = 60 * 60 * 1000;

/** The issuer's metadata (cached an hour); validates that it names the same issuer. */
async function discover(issuer: string): Promise<oauth.AuthorizationServer> {
  const hit = discovered.get(issuer);
  if (hit && Date.now() - hit.at < DISCOVERY_TTL_MS) return hit.as;
  const url = new URL(issuer);
  try {
    const res = await oauth.discoveryRequest(url, {
      [oauth.allowInsecureRequests]: url.protocol === 'http:',
      signal: AbortSignal.timeout(settings.providerTimeoutMs),
    });
    const as = await oauth.processDiscoveryResponse(url, res);
    discovered.set(issuer, { at: Date.now(), as });
    return as;
  } catch (err) {
    throw new CredentialError(`OpenID discovery of ${issuer} failed: ${(err as Error).message}`);
  }
}

/** Endpoints of a provider with every configured override; missing ones of an issuer come from its discovery document. */
export async function effectiveEndpoints(cfg: ProviderConfig): Promise<Endpoints & { issuerMetadata?: oauth.AuthorizationServer }> {
  const e = cfg.endpoints;
  if (cfg.id !== 'oidc' || !e.issuer || (e.authorizationUrl && e.tokenUrl && e.jwksUrl)) return e;
  const as = await discover(e.issuer);
  return {
    issuerMetadata: as,
    ...e,
    authorizationUrl: e.authorizationUrl ?? as.authorization_endpoint,
    tokenUrl: e.tokenUrl ?? as.token_endpoint,
    jwksUrl: e.jwksUrl ?? as.jwks_uri,
    userinfoUrl: e.userinfoUrl ?? as.userinfo_endpoint,
  };
}

export const oidc: ProviderDef = {
  id: 'oidc',
  name: 'OpenID Connect',
  methods: ['oauth', 'oidc'],
  defaults: {},
  requires: { oauth: ['clientId', 'clientSecret', 'issuer'], oidc: ['clientId', 'issuer'] },
  // Discovery fills what is not set; each endpoint can be pinned.
  settings: ['authorizationUrl', 'tokenUrl', 'userinfoUrl', 'jwksUrl'],
  oauth: {
    oidc: true,
    scope: 'openid email profile',
    clientAuth: 'basic',
    // An arbitrary issuer is not an authority on email addresses: its users never link by email.
    profile: async (_cfg, t) => claimsProfile(t.claims!, false),
  },
  verify: {
    oidc: async (cfg, credential, { nonce }) => {
      const e = await effectiveEndpoints(cfg);
      if (!e.jwksUrl) throw new CredentialError('issuer has no JWKS');
      return claimsProfile(await verifyIdToken(credential, { jwksUrl: e.jwksUrl, issuers: [e.issuer!], audience: cfg.clientId!, nonce }), false);
    },
  },
};
