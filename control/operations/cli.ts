// `postgate queue suspend|resume|suspensions|send-now|cancel`: the operator's queue control, through
// the admin API (stored, pushed to every gateway, written to the operator audit log).
import { CliError, type CliContext, type Commands } from '../../core/cli-commands.js';

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3600_000, d: 86_400_000 };

/** `--for 30m` (s, m, h or d) in ms. */
export function durationMs(text: string): number {
  const m = /^(\d+)([smhd])$/.exec(text.trim());
  if (!m || Number(m[1]) <= 0) throw new CliError(`--for takes a duration such as 90s, 30m, 2h or 1d, not ${text}`);
  return Number(m[1]) * UNITS[m[2]!]!;
}

const opt = (c: CliContext, name: string): string | undefined => (typeof c.opts[name] === 'string' ? (c.opts[name] as string) : undefined);

/** --provider and/or --project, as the API takes them. */
const target = (c: CliContext) => {
  const provider = opt(c, 'provider');
  const project = opt(c, 'project');
  return { ...(provider ? { provider } : {}), ...(project ? { project } : {}) };
};

const what = (s: { provider?: string | null; project?: string | null }) =>
  [s.provider ? `provider ${s.provider}` : 'every provider', s.project ? `project ${s.project}` : 'every project'].join(', ');

const suspensionRow = (s: any) => ({
  id: s.id,
  provider: s.provider ?? '*',
  project: s.project ?? '*',
  until: s.until ?? '(resumed by hand)',
  reason: s.reason,
});

export const queueControlCommands: Commands = {
  'queue suspend': {
    usage: 'queue suspend [--provider P] [--project S] [--until ISO | --for 30m] [--reason R]   hold delivery (at least one of provider, project)',
    async run(c) {
      const t = target(c);
      if (!t.provider && !t.project) throw new CliError('queue suspend needs --provider, --project or both');
      const until = opt(c, 'until');
      const span = opt(c, 'for');
      if (until && span) throw new CliError('give --until or --for, not both');
      const reason = opt(c, 'reason');
      const body = {
        ...t,
        ...(until ? { until } : span ? { until: new Date(Date.now() + durationMs(span)).toISOString() } : {}),
        ...(reason ? { reason } : {}),
      };
      const d = await c.call('POST', '/admin/v1/queue/suspensions', body);
      return { data: d, text: `suspended ${what(d)} until ${d.until ?? 'resumed'} (${d.id})` };
    },
  },
  'queue resume': {
    usage: 'queue resume --id ID | [--provider P] [--project S]   end a suspension (or every one naming exactly that provider/project)',
    async run(c) {
      const id = opt(c, 'id');
      let ids: string[];
      if (id) ids = [id];
      else {
        const t = target(c);
        if (!t.provider && !t.project) throw new CliError('queue resume needs --id, or --provider and/or --project');
        const list = (await c.call('GET', '/admin/v1/queue/suspensions')).data as Array<{ id: string; provider: string | null; project: string | null }>;
        ids = list.filter((s) => s.provider === (t.provider ?? null) && s.project === (t.project ?? null)).map((s) => s.id);
        if (!ids.length) throw new CliError(`no suspension of ${what(t)}`);
      }
      const resumed = [];
      for (const i of ids) resumed.push(await c.call('DELETE', `/admin/v1/queue/suspensions/${encodeURIComponent(i)}`));
      return { data: resumed, text: resumed.map((s) => `resumed ${what(s)} (${s.id})`).join('\n') };
    },
  },
  'queue suspensions': {
    usage: 'queue suspensions                     the suspensions in force',
    async run(c) {
      const d = await c.call('GET', '/admin/v1/queue/suspensions');
      return { data: d.data, text: c.table(d.data.map(suspensionRow)) };
    },
  },
  'queue send-now': {
    usage: 'queue send-now [--provider P] [--project S]   deferred mail leaves at once (within throttles and norms)',
    async run(c) {
      const t = target(c);
      const d = await c.call('POST', '/admin/v1/queue/send-now', t);
      return { data: d, text: `woke ${d.woken} deferred message${d.woken === 1 ? '' : 's'} (${what(t)})` };
    },
  },
  'queue cancel': {
    usage: "queue cancel --project S              cancel the project's queued, scheduled and deferred mail (never delivered)",
    async run(c) {
      const d = await c.call('POST', `/admin/v1/projects/${c.slug()}/cancel-queued`);
      return {
        data: d,
        text: `canceled ${d.canceled} email${d.canceled === 1 ? '' : 's'}; the gateways dropped ${d.dropped} queued message${d.dropped === 1 ? '' : 's'}`,
      };
    },
  },
};
