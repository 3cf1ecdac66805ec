// One gateway's live delivery state (DeliveryState, and the snapshot published to Redis for the
// cluster): the tracker's counts, windows and answers with the Pacer's connections, rates and
// warm-up, and the shaping actions in force. Costs providers × projects, never the queue's size.
import { clock, dayOf } from '../../core/clock.js';
import { OTHER } from '../../common/providers.js';
import { normFor, warmupDay } from '../../common/warmup.js';
import {
  addQueue,
  type DeliverySnapshot,
  noOutcomes,
  noProject,
  noProvider,
  older,
  OUTCOMES,
  type Outcomes,
  type ProjectFigures,
  type ProviderFigures,
} from '../../common/delivery-state.js';
import type { Pacer } from '../pacing/pacer.js';
import type { QueueState } from './tracker.js';
import type { ActiveAction } from '../shaping/shaper.js';

export interface SnapshotSources {
  node: string;
  queueState: QueueState;
  pacer: Pacer;
  /** The provider names we report (gateway/metrics.ts providers) and the label of any other name. */
  providers: readonly string[];
  label(name: string): string;
  connections?: { idleByGate(): Iterable<[string, number]> };
  shaper?: { actions(): Iterable<ActiveAction> };
}

export interface SnapshotFilter {
  provider?: string;
  projectId?: string;
  /** The providers without their projects and answers, each project's last hour once instead (the console's overview). */
  summary?: boolean;
}

/** The live state, optionally of one provider and/or project; a provider with nothing to show is left out unless asked for. */
export function deliverySnapshot(src: SnapshotSources, filter: SnapshotFilter = {}): DeliverySnapshot {
  const now = clock.now();
  const providers = new Map<string, ProviderFigures>();
  const wanted = filter.provider ? src.label(filter.provider) : undefined;
  const at = (name: string): ProviderFigures | undefined => {
    const provider = src.label(name);
    if (wanted !== undefined && provider !== wanted) return undefined;
    let p = providers.get(provider);
    if (!p) {
      const t = src.pacer.throttleOf(provider);
      const e = src.pacer.effective(provider);
      p = {
        ...noProvider(provider),
        connectionsLimit: e.connections,
        configuredRate: t.ratePerMinute,
        effectiveRate: e.ratePerMinute,
        effectiveConnections: e.connections,
        answers: src.queueState.answersOf(provider, now),
      };
      providers.set(provider, p);
    }
    return p;
  };
  const projects = new Map<string, ProjectFigures>();
  const project = (p: ProviderFigures, projectId: string): ProjectFigures | undefined => {
    if (filter.projectId && projectId !== filter.projectId) return undefined;
    const k = `${p.provider}\t${projectId}`;
    let f = projects.get(k);
    if (!f) {
      f = noProject(projectId);
      projects.set(k, f);
      p.projects.push(f);
    }
    return f;
  };

  for (const c of src.queueState.counts()) {
    const p = at(c.provider);
    if (!p) continue;
    const f = project(p, c.projectId);
    if (!f) continue;
    addQueue(p.queue, c.queue);
    addQueue(f.queue, c.queue);
    p.oldestAcceptedMs = older(p.oldestAcceptedMs, c.oldestAcceptedMs);
    f.oldestAcceptedMs = older(f.oldestAcceptedMs, c.oldestAcceptedMs);
  }
  for (const [k, w] of src.queueState.windows(now)) {
    const [name = OTHER, projectId = ''] = k.split('\t');
    const p = at(name);
    if (!p) continue;
    const f = project(p, projectId);
    if (!f) continue;
    for (const [to, from] of [
      [p.windows, w],
      [f.windows, w],
    ] as const) {
      for (const span of ['last5m', 'lastHour', 'lastDay'] as const) {
        to[span].delivered += from[span].delivered;
        to[span].deferred += from[span].deferred;
        to[span].bounced += from[span].bounced;
        to[span].complained += from[span].complained;
      }
    }
  }
  // Gates of `other` are `other:<domain>`: they add up under `other`.
  for (const g of src.pacer.gateFigures()) {
    const p = at(g.gate.startsWith(`${OTHER}:`) ? OTHER : g.gate);
    if (!p) continue;
    p.connectionsOpen += g.inFlight;
    p.ratePerMinute += g.lastMinute;
  }
  for (const [gate, idle] of src.connections?.idleByGate() ?? []) {
    const p = at(gate.startsWith(`${OTHER}:`) ? OTHER : gate);
    if (p) p.connectionsOpen += idle;
  }
  for (const u of src.pacer.usageOf(dayOf(now))) {
    const p = at(u.provider);
    if (!p) continue;
    const f = project(p, u.projectId);
    if (!f) continue;
    f.warmupUsed += u.used;
  }
  for (const p of providers.values()) {
    const t = src.pacer.throttleOf(p.provider);
    for (const f of p.projects) {
      const norm = normFor(t, warmupDay(src.queueState.warmupStart.get(f.projectId) ?? 0, now));
      f.warmupNorm = Number.isFinite(norm) ? norm : 0;
    }
  }
  for (const a of src.shaper?.actions() ?? []) {
    const p = at(a.provider);
    if (!p) continue;
    if (filter.projectId && a.projectId && a.projectId !== filter.projectId) continue;
    p.actions.push({
      rule: a.rule,
      provider: p.provider,
      projectId: a.projectId,
      action: a.action.kind,
      value: a.value,
      sinceMs: a.sinceMs,
      untilMs: a.untilMs,
      trigger: a.trigger,
    });
  }
  // Asked for by name: shown even when idle.
  if (wanted !== undefined) at(wanted);
  const list = [...providers.values()].sort((a, b) => src.providers.indexOf(a.provider) - src.providers.indexOf(b.provider));
  for (const p of list) p.projects.sort((a, b) => a.projectId.localeCompare(b.projectId));
  // The series are the node's whole traffic: a filtered read (a provider, a project) has none.
  const series = filter.provider || filter.projectId ? undefined : src.queueState.series(now);
  const out: DeliverySnapshot = { node: src.node, atMs: now, providers: list, ...(series ? { series } : {}) };
  if (filter.summary) {
    const hours = new Map<string, Outcomes>();
    for (const p of list) {
      for (const f of p.projects) {
        let o = hours.get(f.projectId);
        if (!o) hours.set(f.projectId, (o = noOutcomes()));
        for (const k of OUTCOMES) o[k] += f.windows.lastHour[k];
      }
      p.projects = [];
      p.answers = [];
    }
    out.projectsHour = [...hours].map(([projectId, lastHour]) => ({ projectId, lastHour }));
  }
  return out;
}
