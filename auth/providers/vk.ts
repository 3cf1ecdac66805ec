// VK ID (OAuth 2.1): code flow with PKCE whose exchange needs the callback's
// `device_id`, and the legacy SDK's silent token (auth.exchangeSilentAuthToken,
// with the app's service token kept as the client secret). VK does not assert
// that an email was verified: VK users never link by email.
import { providerJson } from './http.js';
import { CredentialError, joinName, str, type Profile, type ProviderDef } from './types.js';

const API_VERSION = '5.131';

function userInfoProfile(u: any): Profile {
  if (u?.user_id === undefined) throw new CredentialError('VK ID answered without a user id');
  return {
    subject: String(u.user_id),
    email: str(u.email)?.toLowerCase() ?? null,
    emailVerified: false,
    name: joinName(u.first_name, u.last_name),
    avatarUrl: str(u.avatar),
    phone: str(u.phone) ? `+${String(u.phone).replace(/^\+/, '')}` : null,
    username: null,
  };
}

async function vkMethod(apiUrl: string, method: string, params: Record<string, string>): Promise<any> {
  const body = await providerJson(`${apiUrl.replace(/\/+$/, '')}/${method}`, { form: { v: API_VERSION, ...params } });
  if (body?.error) throw new CredentialError(`VK ${method} refused: ${body.error.error_code ?? ''}`);
  return body.response;
}

export const vk: ProviderDef = {
  id: 'vk',
  name: 'VK ID',
  methods: ['oauth', 'silent_token'],
  defaults: {
    authorizationUrl: 'https://id.vk.com/authorize',
    tokenUrl: 'https://id.vk.com/oauth2/auth',
    userinfoUrl: 'https://id.vk.com/oauth2/user_info',
    apiUrl: 'https://api.vk.com/method',
  },
  requires: { oauth: ['clientId'], silent_token: ['clientId', 'clientSecret'] },
  oauth: {
    oidc: false,
    scope: 'vkid.personal_info email',
    clientAuth: 'none', // a public client: PKCE is the proof
    forwardCallbackParams: ['device_id', 'state'],
    // VK ID's token reply carries an id_token that is not an OpenID one (no issuer we could check): read it ourselves.
    async readToken(res, state) {
      const body = (await res.json().catch(() => undefined)) as any;
      if (!res.ok || !body || body.error || typeof body.access_token !== 'string')
        throw new CredentialError(`VK ID token exchange failed: ${body?.error ?? res.status}`);
      if (body.state !== undefined && body.state !== state) throw new CredentialError('VK ID answered for another state');
      return { accessToken: body.access_token };
    },
    async profile(cfg, { accessToken }) {
      const body = await providerJson(cfg.endpoints.userinfoUrl!, { form: { access_token: accessToken, client_id: cfg.clientId! } });
      if (body?.error) throw new CredentialError(`VK ID user_info refused: ${body.error}`);
      return userInfoProfile(body.user);
    },
  },
  verify: {
    silent_token: async (cfg, credential) => {
      let payload: { token?: unknown; uuid?: unknown };
      try {
        payload = JSON.parse(credential);
      } catch {
        throw new CredentialError('VK silent token credential must be the SDK payload {token, uuid} as JSON');
      }
      if (typeof payload.token !== 'string' || typeof payload.uuid !== 'string') throw new CredentialError('VK silent token payload needs token and uuid');
      const api = cfg.endpoints.apiUrl!;
      const r = await vkMethod(api, 'auth.exchangeSilentAuthToken', { token: payload.token, access_token: cfg.clientSecret!, uuid: payload.uuid });
      if (typeof r?.access_token !== 'string' || r.user_id === undefined) throw new CredentialError('VK silent token exchange gave no user');
      const [u] = ((await vkMethod(api, 'users.get', { access_token: r.access_token, fields: 'photo_200,screen_name' })) ?? []) as any[];
      return {
        subject: String(r.user_id),
        email: str(r.email)?.toLowerCase() ?? null,
        emailVerified: false,
        name: u ? joinName(u.first_name, u.last_name) : null,
        avatarUrl: u ? str(u.photo_200) : null,
        phone: str(r.phone) ? `+${String(r.phone).replace(/^\+/, '')}` : null,
        username: u ? str(u.screen_name) : null,
      };
    },
  },
};
