// CLI commands of user management: `postgate users list|show|ban|unban|delete --project S`, each a call to
// the auth admin API of the running control (auth/users/routes.ts). --env test acts on the test environment.
import type { CliContext, Commands } from '../../core/cli-commands.js';

const str = (c: CliContext, name: string): string | undefined => (typeof c.opts[name] === 'string' ? (c.opts[name] as string) : undefined);

function env(c: CliContext): string {
  const e = str(c, 'env') ?? 'live';
  if (e !== 'live' && e !== 'test') c.fail('--env takes live or test');
  return e;
}

function userPath(c: CliContext, more = ''): string {
  const id = c.positionals[0] ?? str(c, 'id');
  if (!id) c.fail('give the user id');
  return `/admin/v1/projects/${c.slug()}/auth/users/${encodeURIComponent(id)}${more}?env=${env(c)}`;
}

const row = (u: any) => ({
  id: u.id,
  email: u.email ?? '',
  phone: u.phone ?? '',
  provider: u.provider,
  created: u.createdAt,
  last_sign_in: u.lastSignIn ?? '',
  banned: u.banned ? (u.ban.expiresAt ? `until ${u.ban.expiresAt}` : 'yes') : '',
});

const userText = (u: any) =>
  [
    `id: ${u.id}`,
    `email: ${u.email ?? '-'}${u.email ? (u.emailVerified ? ' (verified)' : ' (unverified)') : ''}`,
    `phone: ${u.phone ?? '-'}${u.phone ? (u.phoneVerified ? ' (verified)' : ' (unverified)') : ''}`,
    `name: ${u.name ?? '-'}`,
    `provider: ${u.provider}`,
    `created: ${u.createdAt}`,
    `last sign-in: ${u.lastSignIn ?? '-'}`,
    `banned: ${u.banned ? `${u.ban.reason}${u.ban.expiresAt ? ` (until ${u.ban.expiresAt})` : ''}` : 'no'}`,
    `metadata: ${JSON.stringify(u.metadata)}`,
    ...(u.identities ? [`identities: ${u.identities.map((i: any) => `${i.provider}:${i.subject}`).join(', ') || '-'}`] : []),
    ...(u.sessions ? [`live sessions: ${u.sessions.length}`, ...u.sessions.map((s: any) => `  ${s.id} ${s.provider} ${s.ip ?? ''} until ${s.expiresAt}`)] : []),
  ].join('\n');

/** --flag → query parameter of GET /users. */
const filters: Record<string, string> = {
  email: 'email',
  'email-prefix': 'email_prefix',
  phone: 'phone',
  provider: 'provider',
  subject: 'subject',
  'created-after': 'created_after',
  'created-before': 'created_before',
  'last-sign-in-after': 'last_sign_in_after',
  'last-sign-in-before': 'last_sign_in_before',
  limit: 'limit',
  after: 'after',
};

const commands: Commands = {
  'users list': {
    usage:
      'users list --project S [--env live|test] [--email E] [--email-prefix P] [--phone +7…] [--provider P [--subject ID]] [--created-after ISO] [--created-before ISO] [--last-sign-in-after ISO] [--last-sign-in-before ISO] [--limit N] [--after ID]',
    async run(c) {
      const q = new URLSearchParams({ env: env(c) });
      for (const [flag, name] of Object.entries(filters)) if (str(c, flag) !== undefined) q.set(name, str(c, flag)!);
      const d = await c.call('GET', `/admin/v1/projects/${c.slug()}/auth/users?${q}`);
      const more = d.hasMore ? `\nmore: --after ${d.nextCursor}` : '';
      return { data: d, text: (d.data.length ? c.table(d.data.map(row)) : '(no users)') + more };
    },
  },
  'users show': {
    usage: 'users show <id> --project S [--env live|test]   a user with its identities and live sessions',
    async run(c) {
      const d = await c.call('GET', userPath(c));
      return { data: d, text: userText(d) };
    },
  },
  'users ban': {
    usage: 'users ban <id> --project S --reason R [--until ISO] [--env live|test]   its sessions end at once; sign-in answers USER_BANNED',
    async run(c) {
      const until = str(c, 'until');
      const d = await c.call('POST', userPath(c, '/ban'), { reason: c.need('reason'), ...(until !== undefined ? { until } : {}) });
      return { data: d, text: `banned ${d.id}${d.ban?.expiresAt ? ` until ${d.ban.expiresAt}` : ''}` };
    },
  },
  'users unban': {
    usage: 'users unban <id> --project S [--env live|test]',
    async run(c) {
      const d = await c.call('POST', userPath(c, '/unban'));
      return { data: d, text: `unbanned ${d.id}` };
    },
  },
  'users delete': {
    usage: 'users delete <id> --project S [--env live|test]   sessions end, personal data removed (the audit log keeps user.deleted)',
    async run(c) {
      const d = await c.call('DELETE', userPath(c));
      return { data: d, text: `deleted ${d.id}` };
    },
  },
};

export function userCommands(): Commands {
  return commands;
}
