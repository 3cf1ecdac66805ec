// The live delivery state (common/delivery-state.ts) to and from its wire form (DeliveryStateResponse).
import { create } from '@bufbuild/protobuf';
import {
  DEFER_CAUSES,
  type DeliverySnapshot,
  noDeferred,
  noSeries,
  OUTCOMES,
  type Outcomes,
  type QueueFigures,
  SERIES,
  type SeriesFigures,
  type WindowFigures,
} from '../common/delivery-state.js';
import {
  type DeliveryStateResponse,
  DeliveryStateResponseSchema,
  type Outcomes as OutcomesMsg,
  type QueueCounts,
  type Series,
  type Windows,
} from './gen/postgate/gateway/v1/gateway_pb.js';

const big = (n: number) => BigInt(Math.max(0, Math.round(n)));

function queueMsg(q: QueueFigures) {
  const deferred: Record<string, bigint> = {};
  for (const c of DEFER_CAUSES) deferred[c] = big(q.deferred[c]);
  return { ready: big(q.ready), inFlight: big(q.inFlight), deferred, held: big(q.held) };
}

const outcomesMsg = (o: Outcomes) => ({ delivered: big(o.delivered), deferred: big(o.deferred), bounced: big(o.bounced), complained: big(o.complained) });
const windowsMsg = (w: WindowFigures) => ({ last5m: outcomesMsg(w.last5m), lastHour: outcomesMsg(w.lastHour), lastDay: outcomesMsg(w.lastDay) });

const seriesMsg = (f: SeriesFigures) => ({
  startMs: BigInt(f.startMs),
  delivered: f.delivered.map(big),
  deferred: f.deferred.map(big),
  bounced: f.bounced.map(big),
  complained: f.complained.map(big),
});

export function deliveryStateToProto(s: DeliverySnapshot): DeliveryStateResponse {
  return create(DeliveryStateResponseSchema, {
    node: s.node,
    atMs: BigInt(s.atMs),
    ...(s.series ? { minuteSeries: seriesMsg(s.series.minute), hourSeries: seriesMsg(s.series.hour) } : {}),
    ...(s.projectsHour ? { projectsHour: s.projectsHour.map((h) => ({ projectId: h.projectId, lastHour: outcomesMsg(h.lastHour) })) } : {}),
    providers: s.providers.map((p) => ({
      provider: p.provider,
      queue: queueMsg(p.queue),
      connectionsOpen: p.connectionsOpen,
      connectionsLimit: p.connectionsLimit,
      ratePerMinute: p.ratePerMinute,
      configuredRate: p.configuredRate,
      effectiveRateLimit: p.effectiveRate,
      effectiveConnections: p.effectiveConnections,
      answers: p.answers.map((a) => ({ enhancedCode: a.enhancedCode, count: big(a.count), sample: a.sample, lastAtMs: BigInt(a.lastAtMs) })),
      windows: windowsMsg(p.windows),
      projects: p.projects.map((f) => ({
        projectId: f.projectId,
        queue: queueMsg(f.queue),
        windows: windowsMsg(f.windows),
        warmupUsed: big(f.warmupUsed),
        warmupNorm: big(f.warmupNorm),
        oldestAcceptedMs: BigInt(f.oldestAcceptedMs),
      })),
      actions: p.actions.map((a) => ({ ...a, sinceMs: BigInt(a.sinceMs), untilMs: BigInt(a.untilMs) })),
      oldestAcceptedMs: BigInt(p.oldestAcceptedMs),
    })),
  });
}

function queueOf(q: QueueCounts | undefined): QueueFigures {
  const deferred = noDeferred();
  for (const c of DEFER_CAUSES) deferred[c] = Number(q?.deferred[c] ?? 0);
  return { ready: Number(q?.ready ?? 0), inFlight: Number(q?.inFlight ?? 0), deferred, held: Number(q?.held ?? 0) };
}

const outcomesOf = (o: OutcomesMsg | undefined): Outcomes => ({
  delivered: Number(o?.delivered ?? 0),
  deferred: Number(o?.deferred ?? 0),
  bounced: Number(o?.bounced ?? 0),
  complained: Number(o?.complained ?? 0),
});
const windowsOf = (w: Windows | undefined): WindowFigures => ({
  last5m: outcomesOf(w?.last5m),
  lastHour: outcomesOf(w?.lastHour),
  lastDay: outcomesOf(w?.lastDay),
});

/** A series off the wire, `buckets` long (a gateway sending none, or fewer buckets, reads as zeros). */
function seriesOf(m: Series | undefined, empty: SeriesFigures, buckets: number): SeriesFigures {
  if (!m) return empty;
  const out: SeriesFigures = { ...empty, startMs: Number(m.startMs) };
  for (const o of OUTCOMES) out[o] = Array.from({ length: buckets }, (_, i) => Number(m[o][i] ?? 0));
  return out;
}

export function deliveryStateFromProto(r: DeliveryStateResponse): DeliverySnapshot {
  const empty = noSeries(Number(r.atMs));
  return {
    node: r.node,
    atMs: Number(r.atMs),
    series: {
      minute: seriesOf(r.minuteSeries, empty.minute, SERIES.minute.buckets),
      hour: seriesOf(r.hourSeries, empty.hour, SERIES.hour.buckets),
    },
    ...(r.projectsHour.length ? { projectsHour: r.projectsHour.map((h) => ({ projectId: h.projectId, lastHour: outcomesOf(h.lastHour) })) } : {}),
    providers: r.providers.map((p) => ({
      provider: p.provider,
      queue: queueOf(p.queue),
      connectionsOpen: p.connectionsOpen,
      connectionsLimit: p.connectionsLimit,
      ratePerMinute: p.ratePerMinute,
      configuredRate: p.configuredRate,
      effectiveRate: p.effectiveRateLimit,
      effectiveConnections: p.effectiveConnections,
      answers: p.answers.map((a) => ({ enhancedCode: a.enhancedCode, count: Number(a.count), sample: a.sample, lastAtMs: Number(a.lastAtMs) })),
      windows: windowsOf(p.windows),
      projects: p.projects.map((f) => ({
        projectId: f.projectId,
        queue: queueOf(f.queue),
        windows: windowsOf(f.windows),
        warmupUsed: Number(f.warmupUsed),
        warmupNorm: Number(f.warmupNorm),
        oldestAcceptedMs: Number(f.oldestAcceptedMs),
      })),
      oldestAcceptedMs: Number(p.oldestAcceptedMs),
      actions: p.actions.map((a) => ({
        rule: a.rule,
        provider: a.provider,
        projectId: a.projectId,
        action: a.action,
        value: a.value,
        sinceMs: Number(a.sinceMs),
        untilMs: Number(a.untilMs),
        trigger: a.trigger,
      })),
    })),
  };
}
