// The live delivery state in one plain shape (camelCase, numbers): what a gateway's tracker
// (gateway/state) reports, what it publishes to Redis for the cluster, what control reads back
// from DeliveryState, and what control sums over gateways (control/operations/state.ts).
// Vocabulary: /work/shared/DESIGN.md "Operations" and the admin API's /queue/status.

/** Each gateway on Redis publishes its snapshot under this key + its node id (gateway/state/publish.ts). */
export const STATE_KEY_PREFIX = 'delivery-state:';

export const DEFER_CAUSES = ['receiver', 'network', 'pacing', 'volume', 'shaping', 'suspended'] as const;
export type DeferCause = (typeof DEFER_CAUSES)[number];

export interface QueueFigures {
  ready: number;
  inFlight: number;
  deferred: Record<DeferCause, number>;
  /** Emails control holds before dispatch (a volume spike); gateways report 0. */
  held: number;
}

export interface Outcomes {
  delivered: number;
  deferred: number;
  bounced: number;
  complained: number;
}

export interface WindowFigures {
  last5m: Outcomes;
  lastHour: Outcomes;
  lastDay: Outcomes;
}

export interface AnswerFigures {
  enhancedCode: string;
  count: number;
  sample: string;
  lastAtMs: number;
}

export interface ActionFigures {
  rule: string;
  provider: string;
  projectId: string;
  action: string;
  value: number;
  sinceMs: number;
  untilMs: number;
  trigger: string;
}

export interface ProjectFigures {
  projectId: string;
  queue: QueueFigures;
  windows: WindowFigures;
  warmupUsed: number;
  /** 0 = no norm. */
  warmupNorm: number;
  /** When control accepted the oldest message still in the queue (epoch ms); 0 = none known. */
  oldestAcceptedMs: number;
}

export interface ProviderFigures {
  provider: string;
  queue: QueueFigures;
  connectionsOpen: number;
  /** 0 = unlimited (the limit in force, after shaping). */
  connectionsLimit: number;
  /** Attempts started in the last minute. */
  ratePerMinute: number;
  /** The throttle's rate per minute; 0 = unlimited. */
  configuredRate: number;
  /** After shaping; 0 = unlimited. */
  effectiveRate: number;
  effectiveConnections: number;
  answers: AnswerFigures[];
  windows: WindowFigures;
  projects: ProjectFigures[];
  actions: ActionFigures[];
  /** When control accepted the oldest message still in the queue (epoch ms); 0 = none known. */
  oldestAcceptedMs: number;
}

/** Outcomes per bucket, oldest bucket first; the last bucket is the current minute (hour). */
export interface SeriesFigures {
  /** Start of the first bucket, epoch ms (a multiple of the step). */
  startMs: number;
  delivered: number[];
  deferred: number[];
  bounced: number[];
  complained: number[];
}

/** The last hour by the minute (60 buckets) and the last day by the hour (24), every provider and project together. */
export interface DeliverySeries {
  minute: SeriesFigures;
  hour: SeriesFigures;
}

export interface DeliverySnapshot {
  node: string;
  atMs: number;
  providers: ProviderFigures[];
  /** Absent from a gateway older than the series (its published snapshot, or its answer): zeros. */
  series?: DeliverySeries;
  /** On a summary (providers without their projects): each project's last hour at every provider. */
  projectsHour?: Array<{ projectId: string; lastHour: Outcomes }>;
}

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const SERIES = { minute: { stepMs: MINUTE_MS, buckets: 60 }, hour: { stepMs: HOUR_MS, buckets: 24 } } as const;
export const OUTCOMES = ['delivered', 'deferred', 'bounced', 'complained'] as const;

/** Where a series of `buckets` steps ending with the one holding nowMs starts. */
export const seriesStart = (nowMs: number, stepMs: number, buckets: number): number => (Math.floor(nowMs / stepMs) - buckets + 1) * stepMs;

const zeros = (n: number) => new Array<number>(n).fill(0);

/** Empty series ending with the minute (hour) of nowMs. */
export function noSeries(nowMs: number): DeliverySeries {
  const of = (stepMs: number, buckets: number): SeriesFigures => ({
    startMs: seriesStart(nowMs, stepMs, buckets),
    delivered: zeros(buckets),
    deferred: zeros(buckets),
    bounced: zeros(buckets),
    complained: zeros(buckets),
  });
  return { minute: of(MINUTE_MS, 60), hour: of(HOUR_MS, 24) };
}

/**
 * Adds `from` (buckets of `stepMs` from `fromStart`) into `to` (from `toStart`), bucket by time: a
 * series read a little earlier (another node's published snapshot, up to seconds old) lands in the
 * right buckets, and what falls outside `to` is left out.
 */
export function addBuckets(to: number[], toStart: number, from: readonly number[], fromStart: number, stepMs: number): void {
  const shift = Math.round((fromStart - toStart) / stepMs);
  for (let i = 0; i < from.length; i++) {
    const j = i + shift;
    if (j >= 0 && j < to.length) to[j]! += from[i] ?? 0;
  }
}

/** The nodes' series summed, ending with the minute (hour) of nowMs; a node without series adds nothing. */
export function sumSeries(snapshots: readonly Pick<DeliverySnapshot, 'series'>[], nowMs: number): DeliverySeries {
  const out = noSeries(nowMs);
  for (const s of snapshots) {
    if (!s.series) continue;
    for (const span of ['minute', 'hour'] as const) {
      const to = out[span];
      const from = s.series[span];
      if (!from) continue;
      for (const o of OUTCOMES) addBuckets(to[o], to.startMs, from[o] ?? [], from.startMs, SERIES[span].stepMs);
    }
  }
  return out;
}

export const noDeferred = (): Record<DeferCause, number> => ({ receiver: 0, network: 0, pacing: 0, volume: 0, shaping: 0, suspended: 0 });
export const noQueue = (): QueueFigures => ({ ready: 0, inFlight: 0, deferred: noDeferred(), held: 0 });
export const noOutcomes = (): Outcomes => ({ delivered: 0, deferred: 0, bounced: 0, complained: 0 });
export const noWindows = (): WindowFigures => ({ last5m: noOutcomes(), lastHour: noOutcomes(), lastDay: noOutcomes() });

/** A project with nothing queued nor seen. */
export const noProject = (projectId: string): ProjectFigures => ({
  projectId,
  queue: noQueue(),
  windows: noWindows(),
  warmupUsed: 0,
  warmupNorm: 0,
  oldestAcceptedMs: 0,
});

/** A provider with nothing queued, no limit and nothing seen. */
export const noProvider = (provider: string): ProviderFigures => ({
  provider,
  queue: noQueue(),
  connectionsOpen: 0,
  connectionsLimit: 0,
  ratePerMinute: 0,
  configuredRate: 0,
  effectiveRate: 0,
  effectiveConnections: 0,
  answers: [],
  windows: noWindows(),
  projects: [],
  actions: [],
  oldestAcceptedMs: 0,
});

/** The older of two accepted times, 0 meaning none. */
export const older = (a: number, b: number): number => (!a ? b : !b ? a : Math.min(a, b));

export function addQueue(to: QueueFigures, q: QueueFigures): void {
  to.ready += q.ready;
  to.inFlight += q.inFlight;
  to.held += q.held;
  for (const c of DEFER_CAUSES) to.deferred[c] += q.deferred[c] ?? 0;
}

function addOutcomes(to: Outcomes, o: Outcomes): void {
  to.delivered += o.delivered;
  to.deferred += o.deferred;
  to.bounced += o.bounced;
  to.complained += o.complained;
}

export function addWindows(to: WindowFigures, w: WindowFigures): void {
  addOutcomes(to.last5m, w.last5m);
  addOutcomes(to.lastHour, w.lastHour);
  addOutcomes(to.lastDay, w.lastDay);
}

/**
 * The cluster's state: counts, connections, rates and windows summed over the nodes' snapshots; answers
 * by enhanced code summed with the latest sample; limits, norms and shaping actions (shared by every
 * gateway) taken once (the largest; actions deduplicated by rule, provider, project and since).
 */
export function sumSnapshots(snapshots: readonly DeliverySnapshot[]): ProviderFigures[] {
  const out = new Map<string, ProviderFigures>();
  for (const s of snapshots) {
    for (const p of s.providers) {
      let t = out.get(p.provider);
      if (!t) out.set(p.provider, (t = noProvider(p.provider)));
      addQueue(t.queue, p.queue);
      addWindows(t.windows, p.windows);
      t.oldestAcceptedMs = older(t.oldestAcceptedMs, p.oldestAcceptedMs ?? 0);
      t.connectionsOpen += p.connectionsOpen;
      // Connections are limited per gateway: the cluster's limit is the sum.
      t.connectionsLimit += p.connectionsLimit;
      t.ratePerMinute += p.ratePerMinute;
      t.configuredRate = Math.max(t.configuredRate, p.configuredRate);
      t.effectiveRate = Math.max(t.effectiveRate, p.effectiveRate);
      t.effectiveConnections = Math.max(t.effectiveConnections, p.effectiveConnections);
      for (const a of p.answers) {
        const g = t.answers.find((x) => x.enhancedCode === a.enhancedCode);
        if (!g) t.answers.push({ ...a });
        else {
          g.count += a.count;
          if (a.lastAtMs > g.lastAtMs) Object.assign(g, { sample: a.sample, lastAtMs: a.lastAtMs });
        }
      }
      for (const a of p.actions) {
        if (!t.actions.some((x) => x.rule === a.rule && x.projectId === a.projectId && x.sinceMs === a.sinceMs)) t.actions.push({ ...a });
      }
      for (const pr of p.projects) {
        let tp = t.projects.find((x) => x.projectId === pr.projectId);
        if (!tp) t.projects.push((tp = noProject(pr.projectId)));
        tp.oldestAcceptedMs = older(tp.oldestAcceptedMs, pr.oldestAcceptedMs ?? 0);
        addQueue(tp.queue, pr.queue);
        addWindows(tp.windows, pr.windows);
        tp.warmupUsed += pr.warmupUsed;
        tp.warmupNorm = Math.max(tp.warmupNorm, pr.warmupNorm);
      }
    }
  }
  for (const t of out.values()) t.answers.sort((a, b) => b.count - a.count || b.lastAtMs - a.lastAtMs);
  return [...out.values()];
}

/**
 * A snapshot narrowed to a provider and/or project: of a project, each provider shows the project's
 * queue and windows (answers stay the provider's), and a provider with none of the project's mail is
 * left out unless it is the one asked for.
 */
export function filterSnapshot(s: DeliverySnapshot, provider?: string, projectId?: string): DeliverySnapshot {
  const providers: ProviderFigures[] = [];
  for (const p of s.providers) {
    if (provider && p.provider !== provider) continue;
    if (!projectId) {
      providers.push(p);
      continue;
    }
    const mine = p.projects.filter((f) => f.projectId === projectId);
    if (!mine.length && p.provider !== provider) continue;
    const queue = noQueue();
    const windows = noWindows();
    let oldestAcceptedMs = 0;
    for (const f of mine) {
      addQueue(queue, f.queue);
      addWindows(windows, f.windows);
      oldestAcceptedMs = older(oldestAcceptedMs, f.oldestAcceptedMs ?? 0);
    }
    providers.push({ ...p, queue, windows, oldestAcceptedMs, projects: mine, actions: p.actions.filter((a) => !a.projectId || a.projectId === projectId) });
  }
  return { ...s, providers };
}
