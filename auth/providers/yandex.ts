// Yandex ID: OAuth code flow with PKCE, and the instant-login ("suggest")
// token. The token goes in `Authorization: OAuth`, never in the URL; an
// instant token counts only if Yandex says it was issued to this project's app.
import { providerJson } from './http.js';
import { CredentialError, joinName, str, type Profile, type ProviderConfig, type ProviderDef } from './types.js';

async function info(cfg: ProviderConfig, token: string): Promise<any> {
  const url = new URL(cfg.endpoints.userinfoUrl!);
  url.searchParams.set('format', 'json');
  return providerJson(url.toString(), { headers: { authorization: `OAuth ${token}` } });
}

function profile(u: any): Profile {
  if (u?.id === undefined) throw new CredentialError('Yandex answered without a user id');
  const avatar =
    u.default_avatar_id && !u.is_avatar_empty ? `https://avatars.yandex.net/get-yapic/${encodeURIComponent(u.default_avatar_id)}/islands-200` : null;
  return {
    subject: String(u.id),
    // Yandex does not assert that an address was verified: never linked by email.
    email: str(u.default_email)?.toLowerCase() ?? null,
    emailVerified: false,
    name: str(u.real_name) ?? joinName(u.first_name, u.last_name) ?? str(u.display_name),
    avatarUrl: avatar,
    phone: str(u.default_phone?.number),
    username: str(u.login),
  };
}

export const yandex: ProviderDef = {
  id: 'yandex',
  name: 'Yandex ID',
  methods: ['oauth', 'instant_token'],
  defaults: {
    authorizationUrl: 'https://oauth.yandex.ru/authorize',
    tokenUrl: 'https://oauth.yandex.ru/token',
    userinfoUrl: 'https://login.yandex.ru/info',
  },
  requires: { oauth: ['clientId', 'clientSecret'], instant_token: ['clientId'] },
  oauth: {
    oidc: false,
    clientAuth: 'post',
    profile: async (cfg, { accessToken }) => profile(await info(cfg, accessToken)),
  },
  verify: {
    instant_token: async (cfg, credential) => {
      const u = await info(cfg, credential);
      if (u?.client_id !== cfg.clientId) throw new CredentialError('Yandex token was issued to another application');
      return profile(u);
    },
  },
};
