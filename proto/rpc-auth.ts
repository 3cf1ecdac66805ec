// Control and its gateways authenticate each other on every internal gRPC call, the event
// stream included (the MACs: core/rpc-mac.ts). Control signs each call; a gateway refuses
// any call without a good MAC with UNAUTHENTICATED and one log line, before a handler sees
// it, and answers the others with a proof over the call's nonce, which control checks
// before it takes a message or a success from the answer.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../core/log.js';
import type { RpcMac } from '../core/rpc-mac.js';

/** The call's MAC, from control. */
export const CALL_MAC = 'x-postgate-call-mac';
/** The answer's proof, from the gateway (in its headers, and in its trailers for an answer without headers). */
export const ANSWER_MAC = 'x-postgate-answer-mac';

/** One string value of a metadata key; undefined when absent, repeated or binary. */
function single(md: grpc.Metadata | undefined, key: string): string | undefined {
  const values = md?.get(key) ?? [];
  return values.length === 1 && typeof values[0] === 'string' ? values[0] : undefined;
}

/** The gateway's side: refuses calls without a good MAC, proves itself in every answer. */
export function gatewayAuth(mac: RpcMac, log: Logger): grpc.ServerInterceptor {
  return (method, call) => {
    let nonce: string | undefined;
    const withProof = (md: grpc.Metadata): grpc.Metadata => {
      if (nonce) md.set(ANSWER_MAC, mac.proof(method.path, nonce));
      return md;
    };
    return new grpc.ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata(md, pass) {
            const count = md.get(CALL_MAC).length;
            const verdict = count > 1 ? { ok: false as const, reason: 'the call carries several MACs' } : mac.verify(method.path, single(md, CALL_MAC));
            if (!verdict.ok) {
              log.warn({ call: method.path, peer: call.getPeer(), reason: verdict.reason }, 'internal gRPC call refused: not authenticated');
              // The metadata is not passed on: the handler never starts, nothing of the request is read.
              call.sendStatus({
                code: grpc.status.UNAUTHENTICATED,
                details: `gateway refuses the call: ${verdict.reason}; control and its gateways need the same POSTGATE_SECRET and build`,
              });
              return;
            }
            nonce = verdict.nonce;
            pass(md);
          },
        }),
      sendMetadata: (md, next) => next(withProof(md)),
      sendStatus: (status, next) => next({ ...status, metadata: withProof(status.metadata?.clone() ?? new grpc.Metadata()) }),
    });
  };
}

/** Control's side: signs every call to the gateway at `target`, and takes nothing from an answer that does not prove the key. */
export function controlAuth(mac: RpcMac, target: string): grpc.Interceptor {
  return (options, nextCall) => {
    const path = options.method_definition.path;
    const { value, nonce } = mac.sign(path);
    const unproven = `gateway ${target} answered without proof that it holds POSTGATE_SECRET: a gateway from before contract 3, one with another POSTGATE_SECRET, or not a gateway of this installation`;
    let proven = false;
    const call: grpc.InterceptingCall = new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        metadata.set(CALL_MAC, value);
        // A listener of one-argument methods (grpc-js tells them apart by arity) hands on what it
        // chooses at once: one that takes a `next` callback could not drop a message without
        // holding back the status after it for ever.
        next(metadata, {
          onReceiveMetadata(md: grpc.Metadata) {
            proven ||= mac.proves(path, nonce, single(md, ANSWER_MAC));
            listener.onReceiveMetadata(md);
          },
          onReceiveMessage(message: unknown) {
            if (proven) listener.onReceiveMessage(message);
            else call.cancelWithStatus(grpc.status.UNAUTHENTICATED, unproven);
          },
          onReceiveStatus(status: grpc.StatusObject) {
            proven ||= mac.proves(path, nonce, single(status.metadata, ANSWER_MAC));
            // An error is passed on as it is (a gateway that refuses this control, or one not reached): it gives nothing to act on.
            listener.onReceiveStatus(status.code === grpc.status.OK && !proven ? { ...status, code: grpc.status.UNAUTHENTICATED, details: unproven } : status);
          },
        });
      },
    });
    return call;
  };
}
