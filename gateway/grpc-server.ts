// The internal gRPC service (proto/postgate/gateway/v1/gateway.proto) that control
// calls: Enqueue, the resumable Events stream, Ack, SetThrottles, QueueStats. Enqueue
// and Events first check that control speaks this build's contract (proto/contract.ts).
// Every call must carry control's MAC of POSTGATE_SECRET (proto/rpc-auth.ts), checked before any handler runs.
import { once } from 'node:events';
import net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { create, fromBinary } from '@bufbuild/protobuf';
import { grpcDefinition } from '../proto/grpc.js';
import { clock, dayOf } from '../core/clock.js';
import {
  AckResponseSchema,
  PacingStatsResponseSchema,
  ProviderUsageSchema,
  SetClockResponseSchema,
  type PacingStatsRequest,
  type SetClockRequest,
  DeliveryEventSchema,
  EnqueueResponseSchema,
  EnqueueResultSchema,
  GatewayService,
  QueueStatsResponseSchema,
  SetThrottlesResponseSchema,
  MetricsResponseSchema,
  SetControlsResponseSchema,
  SendNowResponseSchema,
  InboundMailSchema,
  SetReceivingDomainsResponseSchema,
  type SetReceivingDomainsRequest,
  type SetControlsRequest,
  type DeliveryStateRequest,
  type SendNowRequest,
  type AckRequest,
  type EnqueueRequest,
  type EventsRequest,
  type QueueStatsRequest,
  type SetThrottlesRequest,
} from '../proto/gen/postgate/gateway/v1/gateway_pb.js';
import { CONTRACT, contractMismatch } from '../proto/contract.js';
import { gatewayAuth } from '../proto/rpc-auth.js';
import { RpcMac } from '../core/rpc-mac.js';
import { masterSecret } from '../core/secrets.js';
import { eventCauseOf, eventSourceOf, eventTypeOf } from '../proto/events.js';
import type { DeliveryEventRow } from './outbox/outbox.js';
import { tlsFromJson } from './tls/tls-info.js';
import type { Enqueuer } from './enqueue.js';
import type { GatewayRuntime } from './runtime.js';
import { gatewayControls } from './controls/controls.js';
import { deliveryStateToProto } from '../proto/delivery-state.js';
import { receivingDomains } from './inbound/receive.js';

/** Events read from the outbox per query while a stream catches up. */
const PAGE = 500;

export interface RpcServer {
  port: number;
  /** Ends the Events streams, lets unary calls finish (up to graceMs), then stops. */
  shutdown(graceMs: number): Promise<void>;
}

/** `inbound`: a 'received' event's message (InboundMail bytes, read from the outbox as the event is sent). */
const toProto = (e: DeliveryEventRow, inbound?: Uint8Array) =>
  create(DeliveryEventSchema, {
    inbound: inbound ? fromBinary(InboundMailSchema, inbound) : undefined,
    seq: BigInt(e.seq),
    emailId: e.emailId,
    type: eventTypeOf(e.type),
    recipient: e.recipient,
    atMs: BigInt(e.atMs),
    mx: e.mx,
    response: e.response,
    attempt: e.attempt,
    enhancedCode: e.enhancedCode,
    nextAttemptMs: BigInt(e.nextAttemptMs),
    cause: eventCauseOf(e.cause),
    rule: e.rule,
    provider: e.provider,
    token: e.token,
    source: eventSourceOf(e.source),
    // Kept as JSON of TlsInfo's fields (gateway/tls/tls-info.ts).
    tls: tlsFromJson(e.tls),
  });

function fail(cb: grpc.sendUnaryData<unknown>, err: unknown): void {
  cb({ code: grpc.status.INTERNAL, details: String((err as Error)?.message ?? err) });
}

/** A control of another build: refused before anything is read, so nothing is misread. */
const refusal = (details: string): Partial<grpc.StatusObject> => ({ code: grpc.status.FAILED_PRECONDITION, details });

export async function startRpc(rt: GatewayRuntime, enqueuer: Enqueuer, queuedCount: () => Promise<number>): Promise<RpcServer> {
  const { outbox, feed, log } = rt;
  rt.metrics.readFrom(rt);
  const streams = new Set<AbortController>();
  /** Contract versions already refused: a control of another build retries, one line says why. */
  const refusedContracts = new Set<number>();

  function refuses(contract: number, call: string): string | undefined {
    const mismatch = contractMismatch(contract);
    if (mismatch && !refusedContracts.has(contract)) {
      refusedContracts.add(contract);
      log.error({ call, contract }, mismatch);
    }
    return mismatch;
  }

  /** Pages through the outbox from the cursor, then waits for new commits; ends on cancel. */
  async function streamEvents(call: grpc.ServerWritableStream<EventsRequest, unknown>): Promise<void> {
    const mismatch = refuses(call.request.contract, 'Events');
    if (mismatch) {
      // grpc-js ends a server stream with the status of an 'error' it emits.
      call.emit('error', refusal(mismatch));
      return;
    }
    const stop = new AbortController();
    streams.add(stop);
    const abort = () => stop.abort();
    call.on('cancelled', abort);
    call.on('close', abort);
    call.on('error', abort);
    let cursor = Number(call.request.afterSeq);
    try {
      while (!stop.signal.aborted) {
        const rows = await outbox.eventsAfter(cursor, PAGE);
        if (!rows.length) {
          // Nothing after the cursor, yet the feed may be further on: those events were pruned (a
          // control acked them; with several controls, not necessarily this one). Waiting after the
          // cursor would return at once, and this loop would spin in microtasks and starve the
          // event loop: the whole gateway hung (seen in the two-node kill -9 test).
          cursor = Math.max(cursor, feed.lastSeq);
          await feed.waitAfter(cursor, stop.signal);
          continue;
        }
        for (const row of rows) {
          if (stop.signal.aborted) break;
          // Respect the client's flow control instead of buffering the whole outbox.
          const inbound = row.type === 'received' ? outbox.inboundOf(row.seq) : undefined;
          if (!call.write(toProto(row, inbound))) await once(call, 'drain', { signal: stop.signal });
          cursor = row.seq;
        }
      }
    } catch (err) {
      if (!stop.signal.aborted) log.error({ err }, 'Events stream failed');
    } finally {
      streams.delete(stop);
      call.end();
    }
  }

  const controls = await gatewayControls();
  const receiving = await receivingDomains(outbox);
  const handlers: grpc.UntypedServiceImplementation = {
    enqueue(call: grpc.ServerUnaryCall<EnqueueRequest, unknown>, cb: grpc.sendUnaryData<unknown>) {
      const mismatch = refuses(call.request.contract, 'Enqueue');
      if (mismatch) return cb(refusal(mismatch));
      // The copies of an email (one per recipient) share its attachment bytes: sent once, never copied here.
      const attachmentData = call.request.attachments;
      // Mail an operator canceled (a dispatch that crossed the order) is answered as taken and never queued.
      const dropped = (m: EnqueueRequest['messages'][number]) => controls.isCanceled(m.projectId, Number(m.acceptedMs));
      Promise.all(
        call.request.messages.map((m) =>
          dropped(m)
            ? Promise.resolve({ emailId: m.emailId, key: m.key || m.emailId, duplicate: false, error: '' })
            : enqueuer.enqueue({ ...m, attachmentData }),
        ),
      )
        .then((results) => cb(null, create(EnqueueResponseSchema, { contract: CONTRACT, results: results.map((r) => create(EnqueueResultSchema, r)) })))
        .catch((err) => fail(cb, err));
    },
    events(call: grpc.ServerWritableStream<EventsRequest, unknown>) {
      void streamEvents(call);
    },
    ack(call: grpc.ServerUnaryCall<AckRequest, unknown>, cb: grpc.sendUnaryData<unknown>) {
      outbox
        .prune(Number(call.request.seq))
        .then(() => cb(null, create(AckResponseSchema)))
        .catch((err) => fail(cb, err));
    },
    setThrottles(call: grpc.ServerUnaryCall<SetThrottlesRequest, unknown>, cb: grpc.sendUnaryData<unknown>) {
      const list = call.request.throttles.map((t) => ({
        provider: t.provider,
        dailyNorm: t.dailyNorm,
        growth: t.growth || 1,
        maxDailyNorm: t.maxDailyNorm,
        ratePerMinute: t.ratePerMinute,
        connections: t.connections,
      }));
      if (!list.length) return cb({ code: grpc.status.INVALID_ARGUMENT, details: 'no throttles' });
      rt.pacer.setThrottles(list);
      log.info({ providers: list.length }, 'throttles replaced');
      outbox
        .putSetting('throttles', JSON.stringify(list))
        .then(() => cb(null, create(SetThrottlesResponseSchema)))
        .catch((err) => fail(cb, err));
    },
    // The operator's suspensions and cancel orders, a full replacement: stored, applied, canceled mail dropped.
    setControls(call: grpc.ServerUnaryCall<SetControlsRequest, unknown>, cb: grpc.sendUnaryData<unknown>) {
      const r = call.request;
      // Checked before anything is kept: a malformed push must not replace what is in force.
      const bad = r.suspensions.find((s) => !s.id || (!s.provider && !s.projectId))
        ? 'a suspension needs an id and a provider or a project'
        : r.cancels.find((c) => !c.projectId || c.acceptedBeforeMs <= 0n)
          ? 'a cancel order needs a project and accepted_before_ms'
          : undefined;
      if (bad) return cb({ code: grpc.status.INVALID_ARGUMENT, details: bad });
      controls
        .set({
          suspensions: r.suspensions.map((s) => ({ id: s.id, provider: s.provider, projectId: s.projectId, untilMs: Number(s.untilMs), reason: s.reason })),
          cancels: r.cancels.map((c) => ({ projectId: c.projectId, acceptedBeforeMs: Number(c.acceptedBeforeMs), orderedMs: Number(c.orderedMs) })),
        })
        .then((dropped) => {
          log.info({ suspensions: r.suspensions.length, cancels: r.cancels.length, dropped }, 'queue controls replaced');
          cb(null, create(SetControlsResponseSchema, { dropped: BigInt(dropped) }));
        })
        .catch((err) => fail(cb, err));
    },
    // The receiving domains, a full replacement: stored, then in force for the next RCPT.
    setReceivingDomains(call: grpc.ServerUnaryCall<SetReceivingDomainsRequest, unknown>, cb: grpc.sendUnaryData<unknown>) {
      const list = call.request.domains.map((d) => ({ domain: d.domain, projectId: d.projectId }));
      if (list.some((d) => !d.domain || !d.projectId))
        return cb({ code: grpc.status.INVALID_ARGUMENT, details: 'a receiving domain needs a name and a project' });
      receiving
        .set(list)
        .then(() => {
          log.info({ domains: list.length }, 'receiving domains replaced');
          cb(null, create(SetReceivingDomainsResponseSchema));
        })
        .catch((err) => fail(cb, err));
    },
    sendNow(call: grpc.ServerUnaryCall<SendNowRequest, unknown>, cb: grpc.sendUnaryData<unknown>) {
      const woken = controls.sendNow(call.request.provider, call.request.projectId);
      log.info({ provider: call.request.provider, projectId: call.request.projectId, woken }, 'send-now');
      cb(null, create(SendNowResponseSchema, { woken: BigInt(woken) }));
    },
    pacingStats(call: grpc.ServerUnaryCall<PacingStatsRequest, unknown>, cb: grpc.sendUnaryData<unknown>) {
      const day = call.request.day || dayOf(clock.now());
      (day === dayOf(clock.now()) ? Promise.resolve([]) : outbox.usageOfDay(day))
        .then((persisted) => {
          const providers = rt.pacer
            .stats(call.request.projectId, day, persisted)
            .map((p) =>
              create(ProviderUsageSchema, { provider: p.provider, transactional: BigInt(p.transactional), bulk: BigInt(p.bulk), heldBulk: BigInt(p.heldBulk) }),
            );
          cb(null, create(PacingStatsResponseSchema, { providers }));
        })
        .catch((err) => fail(cb, err));
    },
    setClock(call: grpc.ServerUnaryCall<SetClockRequest, unknown>, cb: grpc.sendUnaryData<unknown>) {
      // Only test set-ups may move time: pacing decisions and event times follow it.
      if (!rt.config.testClock) return cb({ code: grpc.status.PERMISSION_DENIED, details: 'the clock can be moved only with POSTGATE_TEST_CLOCK=1' });
      clock.setOffset(Number(call.request.offsetMs));
      rt.shaper.tick();
      const woken = rt.pacer.reconsider();
      log.info({ offsetMs: clock.offset(), woken }, 'clock moved');
      cb(null, create(SetClockResponseSchema));
    },
    // The live delivery state (gateway/state): counts kept as the queue changes, read without a scan.
    deliveryState(call: grpc.ServerUnaryCall<DeliveryStateRequest, unknown>, cb: grpc.sendUnaryData<unknown>) {
      const r = call.request;
      cb(null, deliveryStateToProto(rt.deliveryState({ provider: r.provider || undefined, projectId: r.projectId || undefined, summary: r.summary })));
    },
    // The gateway's own families, for control's /metrics (gateway/metrics.ts).
    metrics(_call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) {
      cb(null, create(MetricsResponseSchema, { text: rt.metrics.render() }));
    },
    queueStats(_call: grpc.ServerUnaryCall<QueueStatsRequest, unknown>, cb: grpc.sendUnaryData<unknown>) {
      Promise.all([queuedCount(), outbox.countEvents(), outbox.lastSeq()])
        .then(([queued, pending, last]) =>
          cb(null, create(QueueStatsResponseSchema, { queued: BigInt(queued), outboxPending: BigInt(pending), lastSeq: BigInt(last) })),
        )
        .catch((err) => fail(cb, err));
    },
  };

  // Control bounds the attachment bytes of one Enqueue (an email with 40 MB of them goes alone).
  // Only a control holding POSTGATE_SECRET may call, on loopback too: any local process could otherwise
  // send as a tenant's domain, read every project's events and change throttles.
  const auth = gatewayAuth(new RpcMac(masterSecret(rt.config)), log);
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 256 * 1024 * 1024, interceptors: [auth] });
  server.addService(grpcDefinition(GatewayService), handlers);
  // Loopback unless POSTGATE_GATEWAY_HOST names a private interface (controls on other machines),
  // never POSTGATE_HOST, the public one: the MAC authenticates calls, it does not encrypt them
  // (DKIM keys cross this link).
  const host = rt.config.gatewayHost;
  const { gatewayPort } = rt.config;
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${net.isIPv6(host) ? `[${host}]` : host}:${gatewayPort}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );

  return {
    port,
    async shutdown(graceMs) {
      for (const s of streams) s.abort();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}
