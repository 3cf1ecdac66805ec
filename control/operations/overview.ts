// The console's overview (GET /admin/v1/overview): the last hour by the minute and the last day by the
// hour (accepted, counted by control: traffic.ts; delivered, deferred, bounced, complained, counted by
// the gateways: gateway/state), the queue's depth by state, the providers suspended or shaped now, and
// the alerts. It reads what the live state reads (the gateways' counts, control's own windows) plus two
// counts on partial indexes (held, scheduled): never the store's emails, whatever their number.
// assembleOverview is pure; OverviewService gathers what it needs.
import { clock } from '../../core/clock.js';
import type { AlertSettings } from '../../core/config.js';
import type { Logger } from '../../core/log.js';
import type { RedisLink } from '../../core/redis.js';
import {
  addQueue,
  type DeliverySnapshot,
  noOutcomes,
  noQueue,
  OUTCOMES,
  type Outcomes,
  older,
  type ProviderFigures,
  sumSeries,
  sumSnapshots,
} from '../../common/delivery-state.js';
import type { Store } from '../store/index.js';
import type { SuspensionView } from './controls.js';
import type { DeliveryStateService } from './state.js';
import { type AcceptedTraffic, type AcceptedWindows, readTraffic, sumTraffic } from './traffic.js';

export type AlertKind = 'bounce_rate' | 'complaint_rate' | 'queue_age' | 'gateway_unreachable';

export interface Alert {
  kind: AlertKind;
  severity: 'warning' | 'critical';
  project: string | null;
  provider: string | null;
  /** A share (rates), minutes (queue age); null for an unreachable gateway. */
  value: number | null;
  threshold: number | null;
  message: string;
}

export interface OverviewInput {
  now: number;
  snapshots: readonly DeliverySnapshot[];
  unreachable: readonly string[];
  /** Control's accepted counts, every node's. */
  accepted: readonly AcceptedWindows[];
  held: number;
  scheduled: number;
  /** Suspensions in force (QueueControls.list()). */
  suspensions: readonly SuspensionView[];
  alerts: AlertSettings;
  /** A project's slug from its id (the id itself when unknown). */
  slug(projectId: string): string;
}

const iso = (ms: number) => (ms > 0 ? new Date(ms).toISOString() : null);
const percent = (x: number) => `${(Math.round(x * 1000) / 10).toString()} %`;

/**
 * The rate alerts of one project or provider over the last hour: the bounced share of the mail that got
 * a final answer (delivered or bounced), the complained share of the delivered; judged from `minOutcomes`
 * final answers on, at or above a threshold.
 */
export function rateAlerts(o: Outcomes, who: { project: string | null; provider: string | null }, a: AlertSettings): Alert[] {
  const outcomes = o.delivered + o.bounced;
  if (outcomes < a.minOutcomes) return [];
  const name = who.project ? `Project ${who.project}` : `Provider ${who.provider}`;
  const out: Alert[] = [];
  const judge = (kind: AlertKind, value: number, warn: number, critical: number, what: string) => {
    if (value < warn) return;
    const severity = value >= critical ? 'critical' : 'warning';
    const threshold = severity === 'critical' ? critical : warn;
    out.push({ kind, severity, ...who, value, threshold, message: `${name}: ${percent(value)} of ${what} in the last hour (threshold ${percent(threshold)})` });
  };
  judge('bounce_rate', o.bounced / outcomes, a.bounceRate, a.bounceRateCritical, `${outcomes} messages bounced`);
  if (o.delivered > 0)
    judge('complaint_rate', o.complained / o.delivered, a.complaintRate, a.complaintRateCritical, `${o.delivered} delivered drew a complaint`);
  return out;
}

/** The oldest message a provider still queues, past the threshold (critical past 4 times it). */
export function queueAgeAlert(provider: string, oldestAcceptedMs: number, now: number, a: AlertSettings): Alert | undefined {
  if (!oldestAcceptedMs) return undefined;
  const minutes = Math.floor((now - oldestAcceptedMs) / 60_000);
  if (minutes < a.queueAgeMinutes) return undefined;
  const critical = minutes >= 4 * a.queueAgeMinutes;
  const threshold = critical ? 4 * a.queueAgeMinutes : a.queueAgeMinutes;
  return {
    kind: 'queue_age',
    severity: critical ? 'critical' : 'warning',
    project: null,
    provider,
    value: minutes,
    threshold,
    message: `Provider ${provider}: the oldest queued message was accepted ${minutes} minutes ago (threshold ${threshold} minutes)`,
  };
}

const SEVERITY = { critical: 0, warning: 1 } as const;

/**
 * Each project's outcomes over the last hour at every provider, every node's: from a summary's
 * projectsHour, or from the providers' projects of a full snapshot (an older gateway, another node's).
 */
export function projectHours(snapshots: readonly DeliverySnapshot[]): Map<string, Outcomes> {
  const out = new Map<string, Outcomes>();
  const add = (projectId: string, o: Outcomes) => {
    if (!projectId) return;
    let t = out.get(projectId);
    if (!t) out.set(projectId, (t = noOutcomes()));
    for (const k of OUTCOMES) t[k] += o[k] ?? 0;
  };
  for (const s of snapshots) {
    if (s.projectsHour) for (const h of s.projectsHour) add(h.projectId, h.lastHour);
    else for (const p of s.providers) for (const f of p.projects) add(f.projectId, f.windows.lastHour);
  }
  return out;
}

export function assembleOverview(i: OverviewInput) {
  const providers = sumSnapshots(i.snapshots);
  const series = sumSeries(i.snapshots, i.now);
  const accepted = sumTraffic(i.accepted, i.now);

  const queue = noQueue();
  let oldest = 0;
  for (const p of providers) {
    addQueue(queue, p.queue);
    oldest = older(oldest, p.oldestAcceptedMs);
  }

  const alerts: Alert[] = [];
  for (const gw of i.unreachable)
    alerts.push({
      kind: 'gateway_unreachable',
      severity: 'critical',
      project: null,
      provider: null,
      value: null,
      threshold: null,
      message: `Gateway ${gw} did not answer: its queue and counts are missing from this overview`,
    });
  for (const p of providers) {
    alerts.push(...rateAlerts(p.windows.lastHour, { project: null, provider: p.provider }, i.alerts));
    const age = queueAgeAlert(p.provider, p.oldestAcceptedMs, i.now, i.alerts);
    if (age) alerts.push(age);
  }
  for (const [id, o] of projectHours(i.snapshots)) alerts.push(...rateAlerts(o, { project: i.slug(id), provider: null }, i.alerts));
  alerts.sort((a, b) => SEVERITY[a.severity] - SEVERITY[b.severity]);

  // Suspended (by the operator) or shaped (an action of the shaping rules) now.
  const names = new Set<string>();
  for (const s of i.suspensions) if (s.provider) names.add(s.provider);
  for (const p of providers) if (p.actions.length) names.add(p.provider);
  const figures = new Map<string, ProviderFigures>(providers.map((p) => [p.provider, p]));

  const seriesOut = (span: 'minute' | 'hour', stepS: number) => ({
    start: new Date(series[span].startMs).toISOString(),
    step_s: stepS,
    accepted: accepted[span].counts,
    delivered: series[span].delivered,
    deferred: series[span].deferred,
    bounced: series[span].bounced,
    complained: series[span].complained,
  });

  return {
    at: new Date(i.now).toISOString(),
    nodes: i.snapshots.map((s) => s.node).sort(),
    unreachable: [...i.unreachable],
    series: { minute: seriesOut('minute', 60), hour: seriesOut('hour', 3600) },
    queue: {
      ready: queue.ready,
      in_flight: queue.inFlight,
      deferred: { ...queue.deferred },
      held: i.held,
      scheduled: i.scheduled,
      oldest_at: iso(oldest),
    },
    providers: [...names].sort().map((provider) => {
      const suspensions = i.suspensions.filter((s) => s.provider === provider);
      const actions = figures.get(provider)?.actions ?? [];
      return {
        provider,
        // Every project's mail to it is held; a suspension of one project's mail leaves the provider open.
        suspended: suspensions.some((s) => !s.project),
        shaped: actions.length > 0,
        actions: actions.map((a) => ({
          rule: a.rule,
          action: a.action,
          value: a.value,
          project: a.projectId ? i.slug(a.projectId) : null,
          since: iso(a.sinceMs),
          until: iso(a.untilMs),
          trigger: a.trigger,
        })),
        suspensions: suspensions.map((s) => ({ id: s.id, provider: s.provider, project: s.project, reason: s.reason, until: s.until })),
      };
    }),
    alerts,
  };
}

export type Overview = ReturnType<typeof assembleOverview>;

export class OverviewService {
  constructor(
    private readonly deps: {
      store: Store;
      state: DeliveryStateService;
      suspensions: () => Promise<SuspensionView[]>;
      traffic: AcceptedTraffic;
      alerts: AlertSettings;
      log: Logger;
      redis?: RedisLink;
    },
  ) {}

  /** This control's accepted windows and, on a cluster, the other controls' published ones. */
  private async accepted(now: number): Promise<AcceptedWindows[]> {
    const { traffic, redis, log } = this.deps;
    const out = [traffic.windows(now)];
    if (!redis?.up) return out;
    try {
      for (const w of await readTraffic(redis)) if (w.node !== traffic.node) out.push(w);
    } catch (err) {
      redis.failed(err);
      log.warn({ err }, "overview: could not read the other controls' accepted counts from Redis");
    }
    return out;
  }

  async overview(): Promise<Overview> {
    const { store, state } = this.deps;
    const [{ snapshots, unreachable }, held, scheduled, suspensions] = await Promise.all([
      state.snapshots('', '', true),
      store.pacing.heldByProject(),
      store.emails.countScheduled(),
      this.deps.suspensions(),
    ]);
    const now = clock.now();
    const accepted = await this.accepted(now);
    // Slugs of the projects the answer may name (shaping actions, rate alerts), once each.
    const ids = new Set<string>();
    for (const s of snapshots) for (const p of s.providers) for (const a of p.actions) if (a.projectId) ids.add(a.projectId);
    for (const [id, o] of projectHours(snapshots)) if (o.delivered + o.bounced >= this.deps.alerts.minOutcomes) ids.add(id);
    const slugs = new Map<string, string>();
    await Promise.all([...ids].map(async (id) => slugs.set(id, (await store.projects.byId(id))?.slug ?? id)));
    return assembleOverview({
      now,
      snapshots,
      unreachable,
      accepted,
      held: held.reduce((n, h) => n + h.held, 0),
      scheduled,
      suspensions,
      alerts: this.deps.alerts,
      slug: (id) => slugs.get(id) ?? id,
    });
  }
}
