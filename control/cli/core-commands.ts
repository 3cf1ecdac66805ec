// Projects and API keys.
import { CliError, type CliContext, type Commands } from '../../core/cli-commands.js';

export const coreCommands: Commands = {
  'project create': {
    usage: 'project create --name N --slug S     create a project; prints its live and test keys once',
    async run(c) {
      const d = await c.call('POST', '/admin/v1/projects', { name: c.need('name'), slug: c.need('slug') });
      return { data: d, text: `project ${d.slug} (${d.id})\nlive key: ${d.keys.live}\ntest key: ${d.keys.test}\nKeys are shown once; store them now.` };
    },
  },
  'project list': {
    usage: 'project list',
    async run(c) {
      const d = await c.call('GET', '/admin/v1/projects');
      return { data: d.data, text: c.table(d.data) };
    },
  },
  'project pause': {
    usage: 'project pause --project S            stop sending (SENDING_PAUSED)',
    async run(c) {
      const d = await c.call('POST', `/admin/v1/projects/${c.slug()}/pause`);
      return { data: d, text: `${d.slug}: ${d.status}` };
    },
  },
  'project resume': {
    usage: 'project resume --project S',
    async run(c) {
      const d = await c.call('POST', `/admin/v1/projects/${c.slug()}/resume`);
      return { data: d, text: `${d.slug}: ${d.status}` };
    },
  },
  'key create': {
    usage: 'key create --project S --kind live|test [--scope all|auth|users]',
    async run(c) {
      const scope = c.opts.scope;
      const d = await c.call('POST', `/admin/v1/projects/${c.slug()}/keys`, { kind: c.need('kind'), ...(typeof scope === 'string' ? { scope } : {}) });
      return { data: d, text: `${d.kind} key (${d.scope}) ${d.id}\n${d.key}\nShown once; store it now.` };
    },
  },
  'key list': {
    usage: 'key list --project S',
    async run(c) {
      const d = await c.call('GET', `/admin/v1/projects/${c.slug()}/keys`);
      return { data: d.data, text: c.table(d.data) };
    },
  },
  'key revoke': {
    usage: 'key revoke --project S --id ID',
    async run(c) {
      const d = await c.call('DELETE', `/admin/v1/projects/${c.slug()}/keys/${encodeURIComponent(c.need('id'))}`);
      return { data: d, text: `revoked ${d.id}` };
    },
  },
};

coreCommands['plan set'] = {
  usage: 'plan set --project S --plan free|pro|scale|none [--daily-quota N] [--monthly-quota N] [--rate N]',
  async run(c) {
    const num = (name: string) => (typeof c.opts[name] === 'string' ? Number(c.opts[name]) : undefined);
    const body = { plan: c.need('plan'), daily_quota: num('daily-quota'), monthly_quota: num('monthly-quota'), rate: num('rate') };
    const d = await c.call('POST', `/admin/v1/projects/${c.slug()}/plan`, JSON.parse(JSON.stringify(body)));
    return { data: d, text: `${d.slug}: plan ${d.plan}, ${d.daily_quota}/day, ${d.monthly_quota}/month, ${d.rate} requests/s` };
  },
};

coreCommands['domain verify'] = {
  usage: 'domain verify --project S --name D --force   mark a domain verified (DNS managed elsewhere, or a local tour)',
  async run(c) {
    if (c.opts.force !== true) throw new CliError('domain verify needs --force: it skips the DNS check (use POST /v1/domains/:id/verify to check DNS)');
    const d = await c.call('POST', `/admin/v1/projects/${c.slug()}/domains/verify`, { name: c.need('name'), force: true });
    return { data: d, text: `${d.name}: ${d.status}` };
  },
};

/** The operator audit log: every change made through the admin API. */
async function operatorAudit(c: CliContext) {
  const q = new URLSearchParams();
  for (const name of ['limit', 'before']) if (typeof c.opts[name] === 'string') q.set(name, c.opts[name] as string);
  const d = await c.call('GET', `/admin/v1/audit${q.size ? `?${q}` : ''}`);
  const rows = d.data.map((e: any) => ({
    at: e.at,
    action: e.action,
    actor: e.actor,
    target: e.target,
    emails: e.emails ?? '',
    details: Object.keys(e.details).length ? JSON.stringify(e.details) : '',
    id: e.id,
  }));
  const more = d.has_more && d.data.length ? `\nmore: --before ${d.data[d.data.length - 1].id}` : '';
  return { data: d, text: `${c.table(rows)}${more}` };
}

coreCommands['audit list'] = {
  usage:
    'audit list [--limit N] [--before ID]     the operator audit log (who by token fingerprint, what, when, how many emails), newest first\n' +
    '  audit list --project S [--type user.created|session.created|session.revoked|sign_in.failed] [--limit N] [--after ID | --before ID]\n' +
    '                                       the auth audit log of a project, newest first; --after ID pages on to older entries',
  async run(c) {
    if (c.opts.project === undefined) return operatorAudit(c);
    const q = new URLSearchParams();
    for (const name of ['type', 'limit', 'after', 'before']) if (typeof c.opts[name] === 'string') q.set(name, c.opts[name] as string);
    const d = await c.call('GET', `/admin/v1/projects/${c.slug()}/audit${q.size ? `?${q}` : ''}`);
    const rows = d.data.map((e: any) => ({
      at: e.at,
      type: e.type,
      env: e.env,
      user: e.user_id ?? '',
      email: e.email ?? e.phone ?? '',
      provider: e.provider ?? '',
      reason: e.reason ? `${e.reason}${e.suppressed ? ` (+${e.suppressed} suppressed)` : ''}` : '',
      ip: e.ip ?? '',
      id: e.id,
    }));
    const more = d.has_more && d.data.length ? `\nmore: --after ${d.data[d.data.length - 1].id}` : '';
    return { data: d, text: `${c.table(rows)}${more}` };
  },
};
