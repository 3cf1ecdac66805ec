// The internal gRPC service (proto/postgate/gateway/v1/gateway.proto) that control
// calls: Enqueue, the resumable Events stream, Ack, SetThrottles, QueueStats.
import { once } from 'node:events';
import net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import { grpcDefinition } from '../proto/grpc.js';
import {
  AckResponseSchema,
  DeliveryEventSchema,
  EnqueueResponseSchema,
  EnqueueResultSchema,
  GatewayService,
  QueueStatsResponseSchema,
  SetThrottlesResponseSchema,
  type AckRequest,
  type EnqueueRequest,
  type EventsRequest,
  type QueueStatsRequest,
  type SetThrottlesRequest,
} from '../proto/gen/postgate/gateway/v1/gateway_pb.js';
import type { DeliveryEventRow } from '../control/store/outbox.js';
import type { Enqueuer } from './enqueue.js';
import type { GatewayRuntime } from './runtime.js';

/** Events read from the outbox per query while a stream catches up. */
const PAGE = 500;

export interface RpcServer {
  port: number;
  /** Ends the Events streams, lets unary calls finish (up to graceMs), then stops. */
  shutdown(graceMs: number): Promise<void>;
}

const toProto = (e: DeliveryEventRow) =>
  create(DeliveryEventSchema, {
    seq: BigInt(e.seq),
    emailId: e.emailId,
    type: e.type,
    recipient: e.recipient,
    atMs: BigInt(e.atMs),
    mx: e.mx,
    response: e.response,
    attempt: e.attempt,
    enhancedCode: e.enhancedCode,
    nextAttemptMs: BigInt(e.nextAttemptMs),
  });

function fail(cb: grpc.sendUnaryData<unknown>, err: unknown): void {
  cb({ code: grpc.status.INTERNAL, details: String((err as Error)?.message ?? err) });
}

export async function startRpc(
  rt: GatewayRuntime,
  enqueuer: Enqueuer,
  queuedCount: () => Promise<number>,
): Promise<RpcServer> {
  const { outbox, feed, log } = rt;
  const streams = new Set<AbortController>();

  /** Pages through the outbox from the cursor, then waits for new commits; ends on cancel. */
  async function streamEvents(call: grpc.ServerWritableStream<EventsRequest, unknown>): Promise<void> {
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
          await feed.waitAfter(cursor, stop.signal);
          continue;
        }
        for (const row of rows) {
          if (stop.signal.aborted) break;
          // Respect the client's flow control instead of buffering the whole outbox.
          if (!call.write(toProto(row))) await once(call, 'drain', { signal: stop.signal });
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

  const handlers: grpc.UntypedServiceImplementation = {
    enqueue(call: grpc.ServerUnaryCall<EnqueueRequest, unknown>, cb: grpc.sendUnaryData<unknown>) {
      Promise.all(call.request.messages.map((m) => enqueuer.enqueue(m)))
        .then((results) => cb(null, create(EnqueueResponseSchema, { results: results.map((r) => create(EnqueueResultSchema, r)) })))
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
      rt.throttles = call.request.throttles.map((t) => ({
        provider: t.provider,
        dailyNorm: t.dailyNorm,
        ratePerMinute: t.ratePerMinute,
        connections: t.connections,
      }));
      log.info({ providers: rt.throttles.length }, 'throttles replaced');
      cb(null, create(SetThrottlesResponseSchema));
    },
    queueStats(_call: grpc.ServerUnaryCall<QueueStatsRequest, unknown>, cb: grpc.sendUnaryData<unknown>) {
      Promise.all([queuedCount(), outbox.countEvents(), outbox.lastSeq()])
        .then(([queued, pending, last]) =>
          cb(null, create(QueueStatsResponseSchema, { queued: BigInt(queued), outboxPending: BigInt(pending), lastSeq: BigInt(last) })),
        )
        .catch((err) => fail(cb, err));
    },
  };

  // Control batches whole messages (attachments included) into one Enqueue.
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 256 * 1024 * 1024 });
  server.addService(grpcDefinition(GatewayService), handlers);
  // The internal API enqueues mail without authentication: it listens on loopback only
  // (DESIGN.md), whatever POSTGATE_HOST says. Gateways on other machines need a private link.
  const host = '127.0.0.1';
  const { gatewayPort } = rt.config;
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${net.isIPv6(host) ? `[${host}]` : host}:${gatewayPort}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
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
