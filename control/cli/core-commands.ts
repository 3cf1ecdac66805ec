// Projects and API keys.
import type { Commands } from './context.js';

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
    usage: 'key create --project S --kind live|test [--scope all|auth]',
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
