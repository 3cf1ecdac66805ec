// CLI commands of the auth area: providers, allowed origins, settings. Each
// calls the auth admin API of the running control. The CLI (control/cli) runs them;
// they know it only through core/cli-commands.ts.
import type { CliContext, Commands } from '../core/cli-commands.js';
import { jwtCommands } from './jwt/cli.js';
import { userCommands } from './users/cli.js';

const flags: Record<string, string> = {
  'client-id': 'clientId',
  'client-secret': 'clientSecret',
  'bot-token': 'botToken',
  'authorization-url': 'authorizationUrl',
  'token-url': 'tokenUrl',
  'userinfo-url': 'userinfoUrl',
  'jwks-url': 'jwksUrl',
  issuer: 'issuer',
  'api-url': 'apiUrl',
};
const lists: Record<string, string> = {
  methods: 'methods',
  'allow-countries': 'allowCountries',
  'deny-countries': 'denyCountries',
  'allow-cidrs': 'allowCidrs',
  'deny-cidrs': 'denyCidrs',
};

const csv = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
const str = (c: CliContext, name: string): string | undefined => (typeof c.opts[name] === 'string' ? (c.opts[name] as string) : undefined);

function origin(c: CliContext): string {
  const o = c.positionals[0] ?? str(c, 'origin');
  if (!o) c.fail('give the origin, e.g. https://app.example.com');
  return o;
}

function callbackUrl(c: CliContext): string {
  const u = c.positionals[0] ?? str(c, 'url');
  if (!u) c.fail('give the callback URL, e.g. https://app.example.com/auth/callback');
  return u;
}

const providerRow = (p: any) => ({
  provider: p.provider,
  enabled: p.enabled,
  methods: p.methods.join(','),
  client_id: p.clientId ?? '',
  secret: p.hasClientSecret ? 'set' : '',
  bot_token: p.hasBotToken ? 'set' : '',
  endpoints: Object.entries(p.endpoints)
    .map(([k, v]) => `${k}=${v}`)
    .join(' '),
  region: Object.entries(p.region)
    .map(([k, v]) => `${k}=${(v as string[]).join(',')}`)
    .join(' '),
});

const settingsText = (d: any) =>
  `session ttl: ${d.sessionTtlSeconds} s\ncode sender: ${d.codeFrom ?? '(system sender)'}\ntelegram auth_date window: ${d.telegramWindowSeconds} s\ncode verifier required: ${d.requireCodeVerifier ? 'on' : 'off'}` +
  `\ntwo-factor: ${d.twoFactor}\njwt audience: ${d.jwtAudience}\njwt ttl: ${d.jwtTtlSeconds} s`;

function int(c: CliContext, name: string): number | null | undefined {
  const v = str(c, name);
  if (v === undefined) return undefined;
  if (v === '' || v === 'default') return null;
  if (!/^\d+$/.test(v)) c.fail(`--${name} takes a number of seconds (or "default")`);
  return Number(v);
}

const commands: Commands = {
  'provider set': {
    usage:
      'provider set --project S --provider P [--client-id] [--client-secret] [--methods a,b] [--bot-token] [--authorization-url] [--token-url] [--userinfo-url] [--jwks-url] [--issuer] [--api-url] [--allow-countries RU,BY] [--deny-countries] [--allow-cidrs 10.0.0.0/8] [--deny-cidrs]\n' +
      '                                       enable a sign-in provider (google vk yandex github telegram oidc email sms); "" clears a setting',
    async run(c) {
      const body: Record<string, unknown> = {};
      for (const [flag, field] of Object.entries(flags)) if (str(c, flag) !== undefined) body[field] = str(c, flag);
      for (const [flag, field] of Object.entries(lists)) if (str(c, flag) !== undefined) body[field] = csv(str(c, flag)!);
      const d = await c.call('PUT', `/admin/v1/projects/${c.slug()}/auth/providers/${encodeURIComponent(c.need('provider'))}`, body);
      return { data: d, text: `${d.provider}: enabled (${d.methods.join(', ')})` };
    },
  },
  'provider list': {
    usage: 'provider list --project S',
    async run(c) {
      const d = await c.call('GET', `/admin/v1/projects/${c.slug()}/auth/providers`);
      return { data: d.data, text: c.table(d.data.map(providerRow)) };
    },
  },
  'provider disable': {
    usage: 'provider disable --project S --provider P   (its settings are kept; provider set enables it again)',
    async run(c) {
      const d = await c.call('DELETE', `/admin/v1/projects/${c.slug()}/auth/providers/${encodeURIComponent(c.need('provider'))}`);
      return { data: d, text: `${d.provider}: disabled` };
    },
  },
  'origin allow': {
    usage: 'origin allow <origin> --project S      allow scheme://host[:port] for OAuth callbacks and the widget',
    async run(c) {
      const d = await c.call('POST', `/admin/v1/projects/${c.slug()}/auth/origins`, { origin: origin(c) });
      return { data: d, text: `allowed ${d.origin}` };
    },
  },
  'origin list': {
    usage: 'origin list --project S',
    async run(c) {
      const d = await c.call('GET', `/admin/v1/projects/${c.slug()}/auth/origins`);
      return { data: d.data, text: d.data.length ? d.data.join('\n') : '(none)' };
    },
  },
  'origin remove': {
    usage: 'origin remove <origin> --project S',
    async run(c) {
      const d = await c.call('DELETE', `/admin/v1/projects/${c.slug()}/auth/origins`, { origin: origin(c) });
      return { data: d, text: `removed ${d.origin}` };
    },
  },
  'callback allow': {
    usage: 'callback allow <url> --project S       register an exact callback URL; once any is registered, sign-ins return only to those',
    async run(c) {
      const d = await c.call('POST', `/admin/v1/projects/${c.slug()}/auth/callbacks`, { url: callbackUrl(c) });
      return { data: d, text: `registered ${d.url}` };
    },
  },
  'callback list': {
    usage: 'callback list --project S',
    async run(c) {
      const d = await c.call('GET', `/admin/v1/projects/${c.slug()}/auth/callbacks`);
      return { data: d.data, text: d.data.length ? d.data.join('\n') : '(none: any path on an allowed origin)' };
    },
  },
  'callback remove': {
    usage: 'callback remove <url> --project S',
    async run(c) {
      const d = await c.call('DELETE', `/admin/v1/projects/${c.slug()}/auth/callbacks`, { url: callbackUrl(c) });
      return { data: d, text: `removed ${d.url}` };
    },
  },
  'auth show': {
    usage: 'auth show --project S                  session lifetime, code sender, Telegram window',
    async run(c) {
      const d = await c.call('GET', `/admin/v1/projects/${c.slug()}/auth/settings`);
      return { data: d, text: settingsText(d) };
    },
  },
  'auth set': {
    usage:
      'auth set --project S [--session-ttl SECONDS] [--code-from ADDRESS] [--telegram-window SECONDS] [--require-code-verifier on|off] [--two-factor off|optional|required] [--jwt-audience AUD] [--jwt-ttl SECONDS]   ("default" restores one)',
    async run(c) {
      const body: Record<string, unknown> = {};
      const ttl = int(c, 'session-ttl');
      const tg = int(c, 'telegram-window');
      if (ttl !== undefined) body.sessionTtlSeconds = ttl;
      if (tg !== undefined) body.telegramWindowSeconds = tg;
      const from = str(c, 'code-from');
      if (from !== undefined) body.codeFrom = from === '' || from === 'default' ? null : from;
      const bind = str(c, 'require-code-verifier');
      if (bind !== undefined) {
        if (!['on', 'off', 'default'].includes(bind)) c.fail('--require-code-verifier takes on or off');
        body.requireCodeVerifier = bind === 'default' ? null : bind === 'on';
      }
      const tf = str(c, 'two-factor');
      if (tf !== undefined) {
        if (!['off', 'optional', 'required', 'default'].includes(tf)) c.fail('--two-factor takes off, optional or required');
        body.twoFactor = tf === 'default' ? null : tf;
      }
      const aud = str(c, 'jwt-audience');
      if (aud !== undefined) body.jwtAudience = aud === '' || aud === 'default' ? null : aud;
      const jwtTtl = int(c, 'jwt-ttl');
      if (jwtTtl !== undefined) body.jwtTtlSeconds = jwtTtl;
      const d = await c.call('PATCH', `/admin/v1/projects/${c.slug()}/auth/settings`, body);
      return { data: d, text: settingsText(d) };
    },
  },
};

/** The auth area's commands: createAuth (plugin.ts) hands them to the CLI's composition root. */
export function authCommands(): Commands {
  return { ...commands, ...jwtCommands, ...userCommands() };
}
