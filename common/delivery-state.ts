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
}

export interface DeliverySnapshot {
  node: string;
  atMs: number;
  providers: ProviderFigures[];
}

export const noDeferred = (): Record<DeferCause, number> => ({ receiver: 0, network: 0, pacing: 0, volume: 0, shaping: 0, suspended: 0 });
export const noQueue = (): QueueFigures => ({ ready: 0, inFlight: 0, deferred: noDeferred(), held: 0 });
export const noOutcomes = (): Outcomes => ({ delivered: 0, deferred: 0, bounced: 0, complained: 0 });
export const noWindows = (): WindowFigures => ({ last5m: noOutcomes(), lastHour: noOutcomes(), lastDay: noOutcomes() });

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
});

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
        if (!tp) t.projects.push((tp = { projectId: pr.projectId, queue: noQueue(), windows: noWindows(), warmupUsed: 0, warmupNorm: 0 }));
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
    for (const f of mine) {
      addQueue(queue, f.queue);
      addWindows(windows, f.windows);
    }
    providers.push({ ...p, queue, windows, projects: mine, actions: p.actions.filter((a) => !a.projectId || a.projectId === projectId) });
  }
  return { ...s, providers };
}
