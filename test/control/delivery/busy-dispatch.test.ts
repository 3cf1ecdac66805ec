// When the dispatcher holds back (control/delivery/dispatcher.ts): only while mail keeps arriving
// and the event loop is saturated. Steady arrivals that leave the loop room are dispatched as they
// come (at a steady 200 emails/s the dispatcher once handed over 45/s until arrivals paused).
import { describe, expect, it } from 'vitest';
import { Dispatcher } from '../../../control/delivery/dispatcher.js';
import { eventLoopLoad } from '../../../core/event-loop-load.js';

/** A dispatcher over a store with nothing to dispatch, recording each read: its size and when. */
function dispatcher(load: number) {
  const reads: Array<{ limit: number; at: number }> = [];
  const t0 = performance.now();
  const store = {
    emails: {
      undispatched: async (limit: number) => {
        reads.push({ limit, at: performance.now() - t0 });
        return [];
      },
    },
  };
  const noop = () => {};
  const log = { debug: noop, info: noop, warn: noop, error: noop };
  const d = new Dispatcher(store as never, {} as never, log as never, { inc: noop } as never, {} as never, 50, () => load);
  return { d, reads };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
    d.wake();
    const keepArriving = setInterval(() => d.wake(), 20);
    await sleep(550);
    clearInterval(keepArriving);
    d.stop();
    expect(reads.length).toBeGreaterThanOrEqual(1);
    expect(reads[0]!.limit).toBe(20);
    expect(reads[0]!.at).toBeGreaterThanOrEqual(390);
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
