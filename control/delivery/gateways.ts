// Control's view of its gateways (POSTGATE_GATEWAYS). An email always goes to
// the same gateway (by its id), so a retried enqueue meets the gateway that
// remembers the id and is not delivered twice.
import crypto from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import { grpcClient, unary } from '../../proto/grpc.js';
import {
  GatewayService,
  EnqueueRequestSchema,
  OutboundMessageSchema,
  AckRequestSchema,
  EventsRequestSchema,
  SetThrottlesRequestSchema,
  ThrottleSchema,
  PacingStatsRequestSchema,
  SetClockRequestSchema,
  SetControlsRequestSchema,
  SuspensionSchema,
  CancelOrderSchema,
  SendNowRequestSchema,
  SetReceivingDomainsRequestSchema,
  ReceivingDomainSchema,
  type SetControlsResponse,
  type SendNowResponse,
  type Suspension,
  type CancelOrder,
  MetricsRequestSchema,
  DeliveryStateRequestSchema,
  type DeliveryStateResponse,
  type EnqueueResponse,
  type OutboundMessage,
  type DeliveryEvent,
  type PacingStatsResponse,
  type MetricsResponse,
  type Throttle,
} from '../../proto/gen/postgate/gateway/v1/gateway_pb.js';
import type { HostPort } from '../../core/config.js';
import { CONTRACT, mismatchText } from '../../proto/contract.js';
import { controlAuth } from '../../proto/rpc-auth.js';
import { RpcMac } from '../../core/rpc-mac.js';
import { deliveryStateFromProto } from '../../proto/delivery-state.js';
import type { DeliverySnapshot } from '../../common/delivery-state.js';

/**
 * The gateway was built from another commit and refuses this control (see proto/contract.ts), or
 * one of the two cannot prove it holds POSTGATE_SECRET (proto/rpc-auth.ts): asking again soon
 * changes nothing until someone redeploys or fixes the secret.
 */
export const contractRefused = (err: unknown): boolean => {
  const code = (err as Partial<grpc.ServiceError> | undefined)?.code;
  return code === grpc.status.FAILED_PRECONDITION || code === grpc.status.UNAUTHENTICATED;
};

export interface Gateway {
  name: string;
  client: grpc.Client & Record<string, (...args: any[]) => any>;
}

export class GatewayClients {
  readonly list: Gateway[];

  /** `secret`: POSTGATE_SECRET (core/secrets.ts masterSecret), which signs every call and checks every answer. */
  constructor(addresses: HostPort[], secret: string) {
    const mac = new RpcMac(secret);
    this.list = addresses.map(({ host, port }) => {
      const name = `${host}:${port}`;
      // Events may carry a received message (inbound.maxMessageBytes, up to 256 MiB): grpc-js's 4 MB default would refuse it.
      const options = { 'grpc.keepalive_time_ms': 10_000, 'grpc.max_receive_message_length': 256 * 1024 * 1024, interceptors: [controlAuth(mac, name)] };
      return { name, client: grpcClient(GatewayService, name, options) };
    });
  }

  pick(emailId: string): Gateway {
    if (this.list.length === 1) return this.list[0]!;
    const h = crypto.createHash('sha1').update(emailId).digest().readUInt32BE(0);
    return this.list[h % this.list.length]!;
  }

  /** `attachments`: the bytes the messages' compositions name, by ref (each once). */
  async enqueue(gw: Gateway, messages: Array<Omit<OutboundMessage, '$typeName'>>, attachments: Record<string, Uint8Array> = {}): Promise<EnqueueResponse> {
    const req = create(EnqueueRequestSchema, { contract: CONTRACT, messages: messages.map((m) => create(OutboundMessageSchema, m)), attachments });
    // The gateway builds, signs and queues every copy before it answers: a second more per 4 MB of that.
    const sizes = new Map(Object.entries(attachments).map(([ref, b]) => [ref, b.byteLength]));
    const built = messages.reduce((n, m) => n + (m.compose?.attachments ?? []).reduce((k, a) => k + (sizes.get(a.ref) ?? 0), 0), 0);
    const res = await unary<EnqueueResponse>(gw.client, 'enqueue', req, undefined, 30_000 + Math.ceil(built / (4 * 1024 * 1024)) * 1000);
    // A gateway from before contract versions does not refuse: its answer carries none.
    if (res.contract !== CONTRACT) {
      const details = mismatchText(CONTRACT, res.contract);
      throw Object.assign(new Error(details), { code: grpc.status.FAILED_PRECONDITION, details });
    }
    return res;
  }

  ack(gw: Gateway, seq: number): Promise<unknown> {
    return unary(gw.client, 'ack', create(AckRequestSchema, { seq: BigInt(seq) }));
  }

  events(gw: Gateway, afterSeq: number): grpc.ClientReadableStream<DeliveryEvent> {
    return gw.client.events!(create(EventsRequestSchema, { contract: CONTRACT, afterSeq: BigInt(afterSeq) })) as grpc.ClientReadableStream<DeliveryEvent>;
  }

  setThrottles(gw: Gateway, throttles: Array<Omit<Throttle, '$typeName'>>): Promise<unknown> {
    return unary(
      gw.client,
      'setThrottles',
      create(SetThrottlesRequestSchema, { throttles: throttles.map((t) => create(ThrottleSchema, t)) }),
      undefined,
      5_000,
    );
  }

  pacingStats(gw: Gateway, projectId: string, day: string): Promise<PacingStatsResponse> {
    return unary<PacingStatsResponse>(gw.client, 'pacingStats', create(PacingStatsRequestSchema, { projectId, day }), undefined, 5_000);
  }

  /** The gateway's own families in Prometheus text (for control's /metrics). */
  async metrics(gw: Gateway, timeoutMs = 1_000): Promise<string> {
    return (await unary<MetricsResponse>(gw.client, 'metrics', create(MetricsRequestSchema), undefined, timeoutMs)).text;
  }

  /** The operator's suspensions and cancel orders, replacing what the gateway held; answers how many queue items it dropped. */
  async setControls(gw: Gateway, suspensions: Array<Omit<Suspension, '$typeName'>>, cancels: Array<Omit<CancelOrder, '$typeName'>>): Promise<number> {
    const req = create(SetControlsRequestSchema, {
      suspensions: suspensions.map((s) => create(SuspensionSchema, s)),
      cancels: cancels.map((c) => create(CancelOrderSchema, c)),
    });
    return Number((await unary<SetControlsResponse>(gw.client, 'setControls', req, undefined, 10_000)).dropped);
  }

  /** The domains whose mail the gateway's inbound listener takes (control/inbound/push.ts), replacing what it held. */
  async setReceivingDomains(gw: Gateway, domains: Array<{ domain: string; projectId: string }>): Promise<void> {
    const req = create(SetReceivingDomainsRequestSchema, { domains: domains.map((d) => create(ReceivingDomainSchema, d)) });
    await unary(gw.client, 'setReceivingDomains', req, undefined, 10_000);
  }

  /** Deferred mail of a provider and/or project ('' = every one) tried at once; answers how many queue items woke. */
  async sendNow(gw: Gateway, provider: string, projectId: string): Promise<number> {
    return Number((await unary<SendNowResponse>(gw.client, 'sendNow', create(SendNowRequestSchema, { provider, projectId }), undefined, 10_000)).woken);
  }

  /** The gateway's live delivery state, of a provider and/or project ('' = every one). */
  async deliveryState(gw: Gateway, provider = '', projectId = '', timeoutMs = 2_000, summary = false): Promise<DeliverySnapshot> {
    const res = await unary<DeliveryStateResponse>(
      gw.client,
      'deliveryState',
      create(DeliveryStateRequestSchema, { provider, projectId, summary }),
      undefined,
      timeoutMs,
    );
    return deliveryStateFromProto(res);
  }

  /** Test-only: the gateway refuses unless it runs with POSTGATE_TEST_CLOCK=1. */
  setClock(gw: Gateway, offsetMs: number): Promise<unknown> {
    return unary(gw.client, 'setClock', create(SetClockRequestSchema, { offsetMs: BigInt(offsetMs) }), undefined, 5_000);
  }

  close(): void {
    for (const g of this.list) g.client.close();
  }
}
