// `postgate queue status [--provider P] [--project S] [--json]`: the live delivery state
// (GET /admin/v1/queue/status) as tables, or as the API's JSON.
import { CliError, type CliContext, type Commands } from '../../core/cli-commands.js';
import type { QueueStatus } from './state.js';
import { DEFER_CAUSES as CAUSES } from '../../common/delivery-state.js';

type Q = QueueStatus['providers'][number]['queue'];
type W = QueueStatus['providers'][number]['windows']['last_hour'];

const queueCols = (q: Q) => ({
  ready: q.ready,
  in_flight: q.in_flight,
  ...Object.fromEntries(CAUSES.map((c) => [c, q.deferred[c] ?? 0])),
});
const outcomes = (w: W) => `${w.delivered}/${w.deferred}/${w.bounced}/${w.complained}`;
const limit = (n: number | null) => (n === null ? '-' : String(n));

/** The operator's tables: the queue and figures per provider, then by project, answers, warm-up, shaping and held mail. */
export function statusText(d: QueueStatus, table: CliContext['table']): string {
  const out: string[] = [`at ${d.at}, ${d.nodes.length} gateway(s)${d.unreachable.length ? `; not answering: ${d.unreachable.join(', ')}` : ''}`];
  if (!d.providers.length) out.push('', 'nothing queued, in flight or delivered in the last day');
  else {
    out.push(
      '',
      table(
        d.providers.map((p) => ({
          provider: p.provider,
          ...queueCols(p.queue),
          connections: `${p.connections.open}/${limit(p.connections.limit)}`,
          'rate/min': `${p.rate.per_minute} (set ${limit(p.rate.configured)}, now ${limit(p.rate.effective)})`,
          '5m': outcomes(p.windows.last_5m),
          '1h': outcomes(p.windows.last_hour),
          '1d': outcomes(p.windows.last_day),
        })),
      ),
      'deferred by cause: receiver network pacing volume shaping suspended; windows: delivered/deferred/bounced/complained',
    );
    const projects = d.providers.flatMap((p) =>
      p.projects.map((f) => ({ provider: p.provider, project: f.project ?? '(none)', ...queueCols(f.queue), '1h': outcomes(f.windows.last_hour) })),
    );
    if (projects.length) out.push('', 'by project', table(projects));
    const answers = d.providers.flatMap((p) =>
      p.answers.map((a) => ({ provider: p.provider, code: a.enhanced_code || '-', count: a.count, last: a.last_at ?? '', sample: a.sample.slice(0, 100) })),
    );
    if (answers.length) out.push('', 'remote answers (last hour)', table(answers));
    const warmup = d.providers.flatMap((p) => p.warmup.map((w) => ({ provider: p.provider, project: w.project, used: w.used, norm: limit(w.norm) })));
    if (warmup.length) out.push('', 'warm-up today', table(warmup));
    const actions = d.providers.flatMap((p) =>
      p.actions.map((a) => ({ provider: p.provider, rule: a.rule, action: a.action, value: a.value, project: a.project ?? '*', until: a.until ?? '' })),
    );
    if (actions.length) out.push('', 'shaping actions in force', table(actions));
  }
  if (d.held.emails) out.push('', `held before dispatch (volume spike): ${d.held.projects.map((h) => `${h.project} ${h.emails}`).join(', ')}`);
  return out.join('\n');
}

export const queueStatusCommands: Commands = {
  'queue status': {
    usage: 'queue status [--provider P] [--project S]   the live delivery state per provider (and project)',
    async run(c) {
      const q = new URLSearchParams();
      for (const name of ['provider', 'project']) {
        const v = c.opts[name];
        if (v === true) throw new CliError(`--${name} needs a value`);
        if (typeof v === 'string') q.set(name, v);
      }
      const d = (await c.call('GET', `/admin/v1/queue/status${q.size ? `?${q}` : ''}`)) as QueueStatus;
      return { data: d, text: statusText(d, c.table) };
    },
  },
};
