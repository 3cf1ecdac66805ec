// control/delivery/gateways.ts against gateways of the test's own on loopback. Control believes only a
// gateway that proves it holds POSTGATE_SECRET (proto/rpc-auth.ts): a process on a gateway's address
// without it (or a gateway from before contract 3, which answers anyone) gets its answers refused with
// UNAUTHENTICATED, events included, and nothing of them is used. An enqueue answered under another
// contract is refused as FAILED_PRECONDITION; an email always goes to the same gateway.
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import { afterEach, describe, expect, it } from 'vitest';
import { GatewayClients, contractRefused } from '../../../control/delivery/gateways.js';
import { RpcMac } from '../../../core/rpc-mac.js';
import { CONTRACT, mismatchText } from '../../../proto/contract.js';
import { grpcDefinition } from '../../../proto/grpc.js';
import { ANSWER_MAC, CALL_MAC, gatewayAuth } from '../../../proto/rpc-auth.js';
import {
  AckResponseSchema,
  DeliveryEventSchema,
  EnqueueResponseSchema,
  EnqueueResultSchema,
  EventType,
  GatewayService,
  PacingStatsResponseSchema,
  SetThrottlesResponseSchema,
  type DeliveryEvent,
} from '../../../proto/gen/postgate/gateway/v1/gateway_pb.js';

const SECRET = 'the shared secret';
const noop = () => {};
const log = { debug: noop, info: noop, warn: noop, error: noop };

/** A gateway that answers every call at once (an event on Events, then it stays open); `interceptors` decide what it checks and proves. */
async function fakeGateway(interceptors: grpc.ServerInterceptor[], contract = CONTRACT) {
  const calls: string[] = [];
  const server = new grpc.Server({ interceptors });
  server.addService(grpcDefinition(GatewayService), {
    enqueue(_call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) {
      calls.push('enqueue');
      cb(null, create(EnqueueResponseSchema, { contract, results: [create(EnqueueResultSchema, { emailId: 'em_1', key: 'em_1' })] }));
    },
    events(call: grpc.ServerWritableStream<unknown, unknown>) {
      calls.push('events');
      call.write(create(DeliveryEventSchema, { seq: 1n, emailId: 'em_1', type: EventType.DELIVERED, recipient: 'a@b.test' }));
    },
    ack(_call: unknown, cb: grpc.sendUnaryData<unknown>) {
      calls.push('ack');
      cb(null, create(AckResponseSchema));
    },
    setThrottles(_call: unknown, cb: grpc.sendUnaryData<unknown>) {
      cb(null, create(SetThrottlesResponseSchema));
    },
    pacingStats(_call: unknown, cb: grpc.sendUnaryData<unknown>) {
      cb(null, create(PacingStatsResponseSchema));
    },
    queueStats: noop,
    setClock: noop,
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { port, calls, stop: () => server.forceShutdown() };
}

/** Adds a proof under another key to every answer: a process that saw the call, without the secret. */
const wrongProof: grpc.ServerInterceptor = (method, call) => {
  let nonce = '';
  const prove = (md: grpc.Metadata) => {
    md.set(ANSWER_MAC, new RpcMac('another secret').proof(method.path, nonce));
    return md;
  };
  return new grpc.ServerInterceptingCall(call, {
    start: (next) =>
      next({
        onReceiveMetadata(md, pass) {
          nonce = String(md.get(CALL_MAC)[0]).split('.')[2] ?? '';
          pass(md);
        },
      }),
    sendMetadata: (md, next) => next(prove(md)),
    sendStatus: (status, next) => next({ ...status, metadata: prove(status.metadata?.clone() ?? new grpc.Metadata()) }),
  });
};

/** What control gets from a gateway: each call's outcome, and the events of one stream. */
async function talk(port: number) {
  const gateways = new GatewayClients([{ host: '127.0.0.1', port }], SECRET);
  const gw = gateways.list[0]!;
  const settle = (p: Promise<unknown>) =>
    p.then(
      () => 'ok',
      (err: grpc.ServiceError) => err,
    );
  const enqueue = await settle(gateways.enqueue(gw, []));
  const ack = await settle(gateways.ack(gw, 1));
  const throttles = await settle(gateways.setThrottles(gw, [{ provider: 'x', dailyNorm: 1, ratePerMinute: 1, connections: 1, growth: 1, maxDailyNorm: 0 }]));
  const pacing = await settle(gateways.pacingStats(gw, 'prj', '2026-01-01'));
  const events: DeliveryEvent[] = [];
  const stream = gateways.events(gw, 0);
  stream.on('data', (e: DeliveryEvent) => events.push(e));
  const streamEnd = await new Promise<grpc.ServiceError | 'open'>((resolve) => {
    stream.on('error', resolve);
    setTimeout(() => resolve('open'), 1_000);
  });
  stream.cancel();
  gateways.close();
  return { enqueue, ack, throttles, pacing, events, streamEnd };
}

let stop: () => void = noop;
afterEach(() => stop());

describe('control and a gateway authenticate each other', () => {
  it('a gateway with the same secret is served and believed', async () => {
    const gw = await fakeGateway([gatewayAuth(new RpcMac(SECRET), log as never)]);
    stop = gw.stop;
    const r = await talk(gw.port);
    expect([r.enqueue, r.ack, r.throttles, r.pacing]).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(r.streamEnd).toBe('open');
    expect(r.events.map((e) => e.emailId)).toEqual(['em_1']);
    expect(gw.calls).toEqual(['enqueue', 'ack', 'events']);
  });

  it.each([
    ['answers without proof (a gateway from before contract 3, or anything listening on its address)', [] as grpc.ServerInterceptor[]],
    ['proves under another key', [wrongProof]],
  ])('a gateway that %s: every answer is refused, no event is taken', async (_what, interceptors) => {
    const gw = await fakeGateway(interceptors);
    stop = gw.stop;
    const r = await talk(gw.port);
    for (const err of [r.enqueue, r.ack, r.throttles, r.pacing, r.streamEnd]) {
      expect(err).toMatchObject({ code: grpc.status.UNAUTHENTICATED, details: expect.stringContaining('without proof that it holds POSTGATE_SECRET') });
      // The dispatcher and the event stream treat it as a refusal: one error line, not a retry a second.
      expect(contractRefused(err)).toBe(true);
    }
    expect(r.events).toEqual([]);
    // The calls did reach it: it is the answers that were refused.
    expect(gw.calls).toEqual(['enqueue', 'ack', 'events']);
  });
});

describe('GatewayClients', () => {
  it('refuses an enqueue answered under another contract, as a refusal that is not retried soon', async () => {
    const gw = await fakeGateway([gatewayAuth(new RpcMac(SECRET), log as never)], CONTRACT + 1);
    stop = gw.stop;
    const gateways = new GatewayClients([{ host: '127.0.0.1', port: gw.port }], SECRET);
    const err = await gateways.enqueue(gateways.list[0]!, []).then(
      () => 'ok',
      (e: grpc.ServiceError) => e,
    );
    gateways.close();
    expect(err).toMatchObject({ code: grpc.status.FAILED_PRECONDITION, details: mismatchText(CONTRACT, CONTRACT + 1) });
    expect(contractRefused(err)).toBe(true);
    expect(gw.calls).toEqual(['enqueue']);
  });

  it('names each gateway by its address and always picks the same one for an email', () => {
    const addresses = [0, 1, 2].map((i) => ({ host: `10.0.0.${i}`, port: 7000 + i }));
    const gateways = new GatewayClients(addresses, SECRET);
    expect(gateways.list.map((g) => g.name)).toEqual(['10.0.0.0:7000', '10.0.0.1:7001', '10.0.0.2:7002']);
    const ids = Array.from({ length: 300 }, (_, i) => `em_${i}`);
    const picks = ids.map((id) => gateways.pick(id).name);
    // Stable: the same id meets the same gateway (a retried enqueue is not delivered twice).
    expect(ids.map((id) => gateways.pick(id).name)).toEqual(picks);
    expect(new GatewayClients(addresses, SECRET).pick('em_7').name).toBe(gateways.pick('em_7').name);
    // Spread: every gateway gets a fair share.
    for (const g of gateways.list) expect(picks.filter((n) => n === g.name).length).toBeGreaterThan(50);
    gateways.close();
    const one = new GatewayClients([{ host: '127.0.0.1', port: 1 }], SECRET);
    expect(ids.every((id) => one.pick(id) === one.list[0])).toBe(true);
    one.close();
  });

  it('takes only a refusal of contract or secret as contractRefused', () => {
    const withCode = (code: grpc.status) => Object.assign(new Error('x'), { code });
    expect(contractRefused(withCode(grpc.status.FAILED_PRECONDITION))).toBe(true);
    expect(contractRefused(withCode(grpc.status.UNAUTHENTICATED))).toBe(true);
    for (const code of [grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED, grpc.status.INTERNAL, grpc.status.OK])
      expect(contractRefused(withCode(code))).toBe(false);
    expect(contractRefused(new Error('plain'))).toBe(false);
    expect(contractRefused(undefined)).toBe(false);
  });
});
