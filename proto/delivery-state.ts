// The live delivery state (common/delivery-state.ts) to and from its wire form (DeliveryStateResponse).
import { create } from '@bufbuild/protobuf';
import { DEFER_CAUSES, type DeliverySnapshot, noDeferred, type Outcomes, type QueueFigures, type WindowFigures } from '../common/delivery-state.js';
import {
  type DeliveryStateResponse,
  DeliveryStateResponseSchema,
  type Outcomes as OutcomesMsg,
  type QueueCounts,
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

export function deliveryStateToProto(s: DeliverySnapshot): DeliveryStateResponse {
  return create(DeliveryStateResponseSchema, {
    node: s.node,
    atMs: BigInt(s.atMs),
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
      })),
      actions: p.actions.map((a) => ({ ...a, sinceMs: BigInt(a.sinceMs), untilMs: BigInt(a.untilMs) })),
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

export function deliveryStateFromProto(r: DeliveryStateResponse): DeliverySnapshot {
  return {
    node: r.node,
    atMs: Number(r.atMs),
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
      })),
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
