// control/delivery/dispatcher.ts. When the dispatcher holds back: only while mail keeps arriving
// and the event loop is saturated. Steady arrivals that leave the loop room are dispatched as they
// come (at a steady 200 emails/s the dispatcher once handed over 45/s until arrivals paused).
// How many emails a dispatch round reads: about 1 MB of requests, bodies included, so a backlog of
// large emails is handed over in bounded rounds (control's and the gateway's peak memory with 20 kB
// bodies: 246-253 -> 214-218 MB, bench:deliverability).
import { describe, expect, it } from 'vitest';
import { Dispatcher, roundSize } from '../../../control/delivery/dispatcher.js';
import { eventLoopLoad } from '../../../core/event-loop-load.js';

/**
 * A dispatcher over a store recording each read (its size and when). `waitingMs`: how long the
 * emails waiting for dispatch have waited, or none waiting. Their rounds go through (emails with no
 * recipient left to send to: nothing reaches the gateway) and are not marked, so every read finds
 * the same backlog.
 */
function dispatcher(load: number, waitingMs?: number) {
  const reads: Array<{ limit: number; at: number }> = [];
  const t0 = performance.now();
  const createdAt = waitingMs === undefined ? undefined : Date.now() - waitingMs;
  const none = async () => undefined;
  const store = {
    emails: {
      undispatched: async (limit: number) => {
        reads.push({ limit, at: performance.now() - t0 });
        if (createdAt === undefined) return [];
        return Array.from({ length: limit }, (_, i) => ({ id: `e${i}`, projectId: 'p', createdAt, request: '{"from":"a@b.test"}', recipients: [] }));
      },
      markDispatched: none,
    },
    domains: { byName: none },
    pacing: { firstSendAt: none },
  };
  const noop = () => {};
  const log = { debug: noop, info: noop, warn: noop, error: noop };
  const gateways = { pick: () => ({ name: 'gw' }), enqueue: async () => ({ results: [] }) };
  const d = new Dispatcher(store as never, gateways as never, log as never, { inc: noop } as never, {} as never, { rate: 50, holdMs: 5000 }, () => load);
  return { d, reads };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Mail accepted every 20 ms for `ms` (each accept wakes the dispatcher), then the dispatcher stops. */
async function arriving(d: Dispatcher, ms: number): Promise<void> {
  d.wake();
  const keepArriving = setInterval(() => d.wake(), 20);
  await sleep(ms);
  clearInterval(keepArriving);
  d.stop();
}

describe('dispatch while mail arrives', () => {
  it('reads a full round at once when the event loop has room, arrivals or not', async () => {
    const { d, reads } = dispatcher(0.3);
    d.wake(); // an email was just accepted
    await sleep(50);
    d.stop();
    expect(reads).toHaveLength(1);
    expect(reads[0]!.limit).toBe(200);
    expect(reads[0]!.at).toBeLessThan(40);
  });

  it('holds to the floor rate (20 emails per 400 ms at 50/s) while arrivals keep the loop saturated', async () => {
    const { d, reads } = dispatcher(0.95);
    await arriving(d, 550);
    expect(reads.length).toBeGreaterThanOrEqual(1);
    expect(reads[0]!.limit).toBe(20);
    expect(reads[0]!.at).toBeGreaterThanOrEqual(390);
  });

  it('holds no email longer than the hold limit: a backlog that has waited that long is read in full rounds', async () => {
    const { d, reads } = dispatcher(0.95, 6000);
    await arriving(d, 550);
    // The held round finds mail 6 s old (limit 5 s): the round after it is not held.
    expect(reads[0]!.limit).toBe(20);
    expect(reads.length).toBeGreaterThanOrEqual(2);
    expect(reads[1]!.limit).toBe(200);
    expect(reads[1]!.at - reads[0]!.at).toBeLessThan(100);
  });

  it('keeps holding while the backlog is younger than the limit', async () => {
    const { d, reads } = dispatcher(0.95, 1000);
    await arriving(d, 1300);
    expect(reads.length).toBeGreaterThanOrEqual(1);
    for (const r of reads) expect(r.limit).toBe(20);
  });

  it('measures the event loop: near 0 when idle, near 1 when a loop is kept busy', async () => {
    const load = eventLoopLoad(100);
    await sleep(120);
    expect(load()).toBeLessThan(0.5);
    const until = performance.now() + 150;
    while (performance.now() < until) {
      // busy: the loop never gets to wait
    }
    await sleep(0);
    expect(load()).toBeGreaterThan(0.5);
  });
});

describe('roundSize', () => {
  it('reads 200 small emails, fewer large ones, and never fewer than 20', () => {
    expect(roundSize(0)).toBe(200); // nothing read yet
    expect(roundSize(300)).toBe(200);
    expect(roundSize(20_000)).toBe(52);
    expect(roundSize(100_000)).toBe(20);
    expect(roundSize(5_000_000)).toBe(20);
  });
});
