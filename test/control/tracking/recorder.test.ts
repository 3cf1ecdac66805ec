import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../../core/log.js';
import { BATCH, MAX_PENDING, TrackingRecorder } from '../../../control/tracking/recorder.js';
import type { Tracking, TrackingHit } from '../../../control/store/index.js';

const log = createLogger('test', 'silent');
const hit = (i: number): TrackingHit => ({ emailId: `e${i}`, kind: 'open', link: '', at: i, userAgent: 'ua', ip: '203.0.113.0/24', agent: 'person' });

function fakeStore(fail = () => false) {
  const batches: TrackingHit[][] = [];
  const store: Tracking = {
    record: async (hits) => {
      if (fail()) throw new Error('store unavailable');
      batches.push(hits);
    },
    counts: async () => [],
  };
  return { store, batches };
}

afterEach(() => vi.useRealTimers());

describe('TrackingRecorder', () => {
  it('writes the hits of a moment in one batch, after the flush delay', async () => {
    vi.useFakeTimers();
    const { store, batches } = fakeStore();
    const r = new TrackingRecorder(store, log, 200);
    for (let i = 0; i < 10; i++) r.add(hit(i));
    expect(batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(200);
    expect(batches.map((b) => b.length)).toEqual([10]);
    expect(r.recorded).toBe(10);
  });

  it('writes at once a full batch, and at most BATCH hits per transaction', async () => {
    const { store, batches } = fakeStore();
    const r = new TrackingRecorder(store, log, 60_000);
    for (let i = 0; i < BATCH * 2 + 5; i++) r.add(hit(i));
    await r.close();
    expect(batches.map((b) => b.length)).toEqual([BATCH, BATCH, 5]);
    expect(batches.flat().map((h) => h.at)).toEqual(Array.from({ length: BATCH * 2 + 5 }, (_, i) => i));
  });

  it('keeps the hits while the store fails and writes them once it answers, in order', async () => {
    vi.useFakeTimers();
    let down = true;
    const { store, batches } = fakeStore(() => down);
    const r = new TrackingRecorder(store, log, 100);
    r.add(hit(1));
    await vi.advanceTimersByTimeAsync(100);
    r.add(hit(2));
    await vi.advanceTimersByTimeAsync(1000);
    expect(batches).toEqual([]);
    down = false;
    await vi.advanceTimersByTimeAsync(1000);
    expect(batches.flat().map((h) => h.at)).toEqual([1, 2]);
  });

  it('stays bounded when the store never answers: the oldest hits go first', async () => {
    const { store } = fakeStore(() => true);
    const r = new TrackingRecorder(store, log, 60_000);
    for (let i = 0; i < MAX_PENDING + 10; i++) r.add(hit(i));
    await new Promise((resolve) => setImmediate(resolve));
    const pending = (r as unknown as { pending: TrackingHit[] }).pending;
    expect(pending.length).toBe(MAX_PENDING);
    expect(r.dropped).toBe(10);
    expect(pending[0]!.at).toBe(10);
    await r.close();
  });
});
