// Telegram: the Login Widget and Mini App payloads (signed with the bot token)
// and Telegram Login over OpenID Connect (oauth.telegram.org). Telegram users
// have no email.
import { verifyIdToken } from '../id-token.js';
import { checkInitData } from '../telegram.js';
import { claimsProfile } from './oidc.js';
import type { ProviderDef } from './types.js';

export const telegram: ProviderDef = {
  id: 'telegram',
  name: 'Telegram',
  methods: ['widget', 'miniapp', 'oidc', 'oauth'],
  defaults: {
    authorizationUrl: 'https://oauth.telegram.org/auth',
    tokenUrl: 'https://oauth.telegram.org/token',
    jwksUrl: 'https://oauth.telegram.org/.well-known/jwks.json',
    issuer: 'https://oauth.telegram.org',
  },
  requires: { widget: ['botToken'], miniapp: ['botToken'], oidc: ['clientId'], oauth: ['clientId', 'clientSecret'] },
  oauth: {
    oidc: true,
    scope: 'openid profile',
    clientAuth: 'basic',
    profile: async (_cfg, t) => claimsProfile(t.claims!, false),
  },
  verify: {
    miniapp: async (cfg, credential, { windowMs }) => checkInitData(cfg.botToken!, credential, windowMs),
    oidc: async (cfg, credential, { nonce }) =>
      claimsProfile(
        await verifyIdToken(credential, { jwksUrl: cfg.endpoints.jwksUrl!, issuers: [cfg.endpoints.issuer!], audience: cfg.clientId!, nonce }),
        false,
      ),
  },
};
