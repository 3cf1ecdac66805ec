// GitHub OAuth App: the user from /user, the email from /user/emails (only an
// entry GitHub marks verified counts, the primary one first).
import { providerJson } from './http.js';
import { str, type ProviderDef } from './types.js';

export const github: ProviderDef = {
  id: 'github',
  name: 'GitHub',
  methods: ['oauth'],
  defaults: {
    authorizationUrl: 'https://github.com/login/oauth/authorize',
    tokenUrl: 'https://github.com/login/oauth/access_token',
    userinfoUrl: 'https://api.github.com/user',
    apiUrl: 'https://api.github.com',
  },
  requires: { oauth: ['clientId', 'clientSecret'] },
  oauth: {
    oidc: false,
    scope: 'read:user user:email',
    clientAuth: 'post',
    async profile(cfg, { accessToken }) {
      const headers = { authorization: `Bearer ${accessToken}`, accept: 'application/vnd.github+json' };
      const user = await providerJson(cfg.endpoints.userinfoUrl!, { headers });
      const emails = (await providerJson(`${cfg.endpoints.apiUrl!.replace(/\/+$/, '')}/user/emails`, { headers })) as Array<{
        email: string;
        primary: boolean;
        verified: boolean;
      }>;
      const verified = Array.isArray(emails) ? emails.filter((e) => e && e.verified === true && typeof e.email === 'string') : [];
      const chosen = verified.find((e) => e.primary) ?? verified[0];
      return {
        subject: String(user.id), // numeric and stable; `login` can change
        email: chosen ? chosen.email.toLowerCase() : null,
        emailVerified: !!chosen,
        name: str(user.name) ?? str(user.login),
        avatarUrl: str(user.avatar_url),
        phone: null,
        username: str(user.login),
      };
    },
  },
};
