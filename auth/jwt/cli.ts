// CLI commands of the JWT signing keys: list them with their states, rotate (a new key published now, signing
// after the publish lead, or at once with --now). They call the running control's admin API.
import type { Commands } from '../../core/cli-commands.js';

const row = (k: any) => ({
  kid: k.kid,
  alg: k.alg,
  state: k.state,
  created: k.createdAt,
  signs_from: k.activeFrom,
  retired: k.retiredAt ?? '',
  published_until: k.dropAfter ?? '',
});

export const jwtCommands: Commands = {
  'auth keys': {
    usage:
      'auth keys list | auth keys rotate [--now]   the JWT signing keys (one set for every project): list their states; rotate publishes a new key that signs after 10 minutes (--now: at once), the old one stays published until its tokens expired',
    async run(c) {
      const action = c.positionals[0] ?? 'list';
      if (action === 'list') {
        const d = await c.call('GET', '/admin/v1/auth/signing-keys');
        return { data: d.data, text: c.table(d.data.map(row)) };
      }
      if (action === 'rotate') {
        const d = await c.call('POST', '/admin/v1/auth/signing-keys/rotate', { now: c.opts.now === true });
        return { data: d, text: `new key ${d.kid}: published now, signs from ${d.activeFrom}` };
      }
      return c.fail('auth keys takes list or rotate [--now]');
    },
  },
};
