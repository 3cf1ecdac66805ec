// `postgate throttle list|set` and `postgate pacing approve`: the operator's pacing
// commands, through the admin API (so a change is stored and pushed to the gateways at once).
import { CliError, type CliContext, type Commands } from '../../core/cli-commands.js';

const number = (c: CliContext, name: string): number | undefined => {
  const v = c.opts[name];
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || !Number.isFinite(n) || n < 0) throw new CliError(`--${name} must be a number ≥ 0`);
  return n;
};

const line = (t: Record<string, unknown>) =>
  `${t.provider}: norm ${t.daily_norm || 'none'}/day ×${t.growth} a day${t.max_daily_norm ? ` up to ${t.max_daily_norm}` : ''}, ` +
  `${t.rate_per_minute || 'unlimited'}/min, ${t.connections || 'unlimited'} connections (${t.source})`;

export const pacingCommands: Commands = {
  'throttle list': {
    usage: 'throttle list                          per receiving provider: warm-up norm, growth, rate and connections',
    async run(c) {
      const d = await c.call('GET', '/admin/v1/throttles');
      return { data: d.data, text: c.table(d.data) };
    },
  },
  'throttle set': {
    usage: 'throttle set --provider P [--daily-norm N] [--growth X] [--max-daily-norm N] [--rate N/min] [--connections N]   live, on every gateway',
    async run(c) {
      const body = {
        daily_norm: number(c, 'daily-norm'),
        growth: number(c, 'growth'),
        max_daily_norm: number(c, 'max-daily-norm'),
        rate_per_minute: number(c, 'rate'),
        connections: number(c, 'connections'),
      };
      const given = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
      if (!Object.keys(given).length) throw new CliError('throttle set needs at least one of --daily-norm, --growth, --max-daily-norm, --rate, --connections');
      const d = await c.call('POST', `/admin/v1/throttles/${encodeURIComponent(c.need('provider'))}`, given);
      return { data: d, text: line(d) };
    },
  },
  'pacing approve': {
    usage: 'pacing approve --project S [--volume N] [--day YYYY-MM-DD]   let a bulk volume spike go (held mail is sent)',
    async run(c) {
      const volume = number(c, 'volume');
      const day = c.opts.day;
      const d = await c.call('POST', `/admin/v1/projects/${c.slug()}/pacing/approve`, {
        ...(volume !== undefined ? { volume } : {}),
        ...(typeof day === 'string' ? { day } : {}),
      });
      return { data: d, text: `${d.project}: ${d.volume} bulk emails approved for ${d.day}; ${d.released} held emails released` };
    },
  },
};
