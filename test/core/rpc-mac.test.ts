// The MACs of the internal gRPC calls (core/rpc-mac.ts): what a gateway accepts and what control believes.
import { describe, expect, it } from 'vitest';
import { RpcMac } from '../../core/rpc-mac.js';

const ENQUEUE = '/postgate.gateway.v1.GatewayService/Enqueue';
const ACK = '/postgate.gateway.v1.GatewayService/Ack';

/** A MAC pair on a clock the test moves. */
function pair(secret = 'the shared secret') {
  let now = 1_800_000_000_000;
  const clock = { now: () => now, move: (ms: number) => (now += ms) };
  return { clock, control: new RpcMac(secret, { now: clock.now }), gateway: new RpcMac(secret, { now: clock.now }) };
}

describe('call MACs', () => {
  it('accepts a fresh call once: the same header again is a replay', () => {
    const { control, gateway } = pair();
    const { value, nonce } = control.sign(ENQUEUE);
    expect(gateway.verify(ENQUEUE, value)).toEqual({ ok: true, nonce });
    expect(gateway.verify(ENQUEUE, value)).toMatchObject({ ok: false, reason: expect.stringContaining('replays') });
    // Each call has its own nonce.
    expect(gateway.verify(ENQUEUE, control.sign(ENQUEUE).value).ok).toBe(true);
  });

  it('refuses no MAC, a malformed one, another key, another method and an altered time', () => {
    const { control, gateway } = pair();
    expect(gateway.verify(ENQUEUE, undefined)).toMatchObject({ ok: false, reason: expect.stringContaining('no MAC') });
    for (const bad of ['', 'v1', 'Bearer x', `${control.sign(ENQUEUE).value}x`, control.sign(ENQUEUE).value.replace(/^v1/, 'v2')]) {
      expect(gateway.verify(ENQUEUE, bad)).toMatchObject({ ok: false, reason: expect.stringContaining('malformed') });
    }
    const other = new RpcMac('another secret', { now: () => 1_800_000_000_000 });
    expect(gateway.verify(ENQUEUE, other.sign(ENQUEUE).value)).toMatchObject({ ok: false, reason: expect.stringContaining('does not match') });
    expect(gateway.verify(ENQUEUE, control.sign(ACK).value)).toMatchObject({ ok: false, reason: expect.stringContaining('does not match') });
    const [v, at, nonce, mac] = control.sign(ENQUEUE).value.split('.');
    expect(gateway.verify(ENQUEUE, [v, String(Number(at) + 1), nonce, mac].join('.'))).toMatchObject({
      ok: false,
      reason: expect.stringContaining('does not match'),
    });
  });

  it('accepts a time up to 60 s off either way, not more', () => {
    const { clock, control, gateway } = pair();
    const late = control.sign(ENQUEUE).value;
    const early = control.sign(ENQUEUE).value;
    clock.move(60_000);
    expect(gateway.verify(ENQUEUE, late).ok).toBe(true);
    clock.move(1);
    expect(gateway.verify(ENQUEUE, early)).toMatchObject({ ok: false, reason: expect.stringContaining('-60 s from') });
    const ahead = control.sign(ENQUEUE).value;
    clock.move(-60_001);
    expect(gateway.verify(ENQUEUE, ahead)).toMatchObject({ ok: false, reason: expect.stringContaining('60 s from') });
  });

  it('remembers nonces only while their calls are fresh (memory stays bounded), and a late replay is still refused', () => {
    const { clock, control, gateway } = pair();
    const first = control.sign(ENQUEUE).value;
    expect(gateway.verify(ENQUEUE, first).ok).toBe(true);
    for (let i = 0; i < 5_000; i++) {
      clock.move(100);
      expect(gateway.verify(ENQUEUE, control.sign(ENQUEUE).value).ok).toBe(true);
    }
    // 500 s of calls, one every 0.1 s: only about the last 60 s of nonces are kept.
    expect((gateway as unknown as { seen: Map<string, number> }).seen.size).toBeLessThanOrEqual(602);
    expect(gateway.verify(ENQUEUE, first).ok).toBe(false);
  });
});

describe('answer proofs', () => {
  it('prove the key over the call nonce and method; a call MAC is not a proof', () => {
    const { control, gateway } = pair();
    const { value, nonce } = control.sign(ENQUEUE);
    expect(control.proves(ENQUEUE, nonce, gateway.proof(ENQUEUE, nonce))).toBe(true);
    expect(control.proves(ENQUEUE, nonce, undefined)).toBe(false);
    expect(control.proves(ENQUEUE, nonce, new RpcMac('another secret').proof(ENQUEUE, nonce))).toBe(false);
    expect(control.proves(ENQUEUE, nonce, gateway.proof(ENQUEUE, control.sign(ENQUEUE).nonce))).toBe(false);
    expect(control.proves(ENQUEUE, nonce, gateway.proof(ACK, nonce))).toBe(false);
    // The call's own MAC, reflected back, proves nothing.
    expect(control.proves(ENQUEUE, nonce, value.split('.')[3])).toBe(false);
  });
});
