// The MACs control and its gateways put on every internal gRPC call (proto/rpc-auth.ts). Both
// derive one key from POSTGATE_SECRET, which every node already shares: a process that reaches
// a gateway's port without the secret can call nothing, and cannot pose as a gateway either.
// A call carries `v1.<ms>.<nonce>.<mac>`, the MAC over (method path, time, nonce); the answer
// carries a MAC over the same nonce under another label, so neither can stand for the other.
import crypto from 'node:crypto';
import { deriveKey } from './crypto.js';

/** How far the clocks of two nodes may disagree; a nonce is remembered this long past its time. */
export const RPC_SKEW_MS = 60_000;

const FORMAT = /^v1\.(\d{1,15})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

export type RpcVerdict = { ok: true; nonce: string } | { ok: false; reason: string };

export interface RpcMacOptions {
  skewMs?: number;
  /**
   * Real time, not core/clock: tests move that clock on control and on its gateways at
   * different moments, while what may differ here is two machines' real clocks.
   */
  now?: () => number;
}

export class RpcMac {
  private readonly key: Buffer;
  private readonly skewMs: number;
  private readonly now: () => number;
  /** Nonces of calls accepted, each with the time past which its call is stale anyway. */
  private readonly seen = new Map<string, number>();

  constructor(secret: string, opts: RpcMacOptions = {}) {
    this.key = deriveKey(secret, 'internal rpc v1');
    this.skewMs = opts.skewMs ?? RPC_SKEW_MS;
    this.now = opts.now ?? Date.now;
  }

  private mac(label: 'call' | 'answer', path: string, at: string, nonce: string): Buffer {
    return crypto.createHmac('sha256', this.key).update(`${label}\n${path}\n${at}\n${nonce}`).digest();
  }

  /** The credential of one call to `path` (a gRPC method path), and its nonce, which the answer's proof names. */
  sign(path: string): { value: string; nonce: string } {
    const at = String(this.now());
    const nonce = crypto.randomBytes(16).toString('base64url');
    return { value: `v1.${at}.${nonce}.${this.mac('call', path, at, nonce).toString('base64url')}`, nonce };
  }

  /** Checks a call's credential: its MAC (in constant time), its time within the skew, its nonce never seen. */
  verify(path: string, value: string | undefined): RpcVerdict {
    if (value === undefined) return { ok: false, reason: 'the call carries no MAC (a control from before contract 3, or not a control)' };
    const m = FORMAT.exec(value);
    if (!m) return { ok: false, reason: 'the call carries a malformed MAC' };
    const [, at, nonce, mac] = m as unknown as [string, string, string, string];
    if (!crypto.timingSafeEqual(Buffer.from(mac, 'base64url'), this.mac('call', path, at, nonce))) {
      return { ok: false, reason: "the call's MAC does not match (a caller without this node's POSTGATE_SECRET)" };
    }
    const now = this.now();
    const off = Number(at) - now;
    if (Math.abs(off) > this.skewMs) {
      return {
        ok: false,
        reason: `the call's time is ${Math.round(off / 1000)} s from this node's clock (at most ${this.skewMs / 1000} s): check both clocks`,
      };
    }
    this.forget(now);
    if (this.seen.has(nonce)) return { ok: false, reason: 'the call replays a nonce already used' };
    this.seen.set(nonce, Number(at) + this.skewMs);
    return { ok: true, nonce };
  }

  /** Nonces whose calls are stale by now: a replay of them is refused by its time. */
  private forget(now: number): void {
    // Roughly in time order (calls arrive within the skew): stop at the first still needed.
    for (const [nonce, until] of this.seen) {
      if (until >= now) break;
      this.seen.delete(nonce);
    }
  }

  /** The answer's proof that its server holds the key: a MAC over the call's nonce. */
  proof(path: string, nonce: string): string {
    return this.mac('answer', path, '', nonce).toString('base64url');
  }

  /** Whether `value` is the proof of an answer to the call that carried `nonce` (constant time). */
  proves(path: string, nonce: string, value: string | undefined): boolean {
    if (value === undefined || !/^[A-Za-z0-9_-]{43}$/.test(value)) return false;
    return crypto.timingSafeEqual(Buffer.from(value, 'base64url'), this.mac('answer', path, '', nonce));
  }
}
