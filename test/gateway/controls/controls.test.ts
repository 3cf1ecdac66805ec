// gateway/controls/controls.ts on a real outbox and Haraka's own timer queue (haraka-utils), without
// Haraka: cancel orders judged by accepted_ms (0 counts as before), canceled items taken off the
// timer queue in one pass and their files removed, the start gate of a gateway that had controls
// (older mail waits for control's push, or the time limit), the push kept across a restart, and
// send-now waking what waits, in one pass too.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type Controls, GatewayControls, type QueueItems } from '../../../gateway/controls/controls.js';
import type { HarakaOutbound, HMailItem } from '../../../gateway/haraka.js';
import { Outbox } from '../../../gateway/outbox/outbox.js';
import { Pacer } from '../../../gateway/pacing/pacer.js';

/** Haraka's own timer queue of delayed items (the one its outbound uses). */
interface TimerQueue {
  queue: Array<{ id: string; cb: (() => void) | null }>;
  add(id: string, ms: number, cb: () => void): unknown;
  discard(id: string): unknown;
  length(): number;
  drain(): void;
  shutdown(): void;
}
const TimerQueueClass = createRequire(import.meta.url)('haraka-utils/lib/timer_queue.js') as new (interval: number) => TimerQueue;

const silent = { info() {}, warn() {}, error() {}, debug() {} } as never;

let dir: string;
let outbox: Outbox;
let tq: TimerQueue;
let delivered: string[];
let outbound: HarakaOutbound;

/** A queue item with a file of its own, queued `ageMs` ago. */
function item(name: string, projectId: string, acceptedMs: number, o: { ageMs?: number; provider?: string } = {}): HMailItem {
  const file = path.join(dir, name);
  fs.writeFileSync(file, 'message');
  const hmail = {
    filename: name,
    path: file,
    notes: o.provider ? { postgate_provider: o.provider } : {},
    num_failures: 0,
    todo: {
      uuid: `u-${name}`,
      domain: 'inbox.test',
      queue_time: Date.now() - (o.ageMs ?? 0),
      rcpt_to: [],
      notes: { project_id: projectId, accepted_ms: acceptedMs },
    },
    discard() {
      fs.rmSync(file, { force: true });
    },
  };
  return hmail as unknown as HMailItem;
}

/** Onto the timer queue as Haraka's DELAY puts it (its callback back onto the delivery queue). */
const delay = (h: HMailItem) => tq.add(h.filename, 3600_000, () => outbound.delivery_queue.push(h));

const controls = (c: Partial<Controls> = {}): Controls => ({ suspensions: [], cancels: [], ...c });

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-controls-'));
  outbox = Outbox.open(path.join(dir, 'outbox.db'));
  tq = new TimerQueueClass(1000);
  delivered = [];
  outbound = {
    temp_fail_queue: tq,
    delivery_queue: { push: (h: HMailItem) => void delivered.push(h.filename), length: () => delivered.length },
  } as unknown as HarakaOutbound;
});
afterEach(() => {
  tq.shutdown();
  outbox.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('gateway controls', () => {
  it("cancel orders: a project's mail accepted at or before the latest order, an unknown time counting as before", async () => {
    const c = new GatewayControls({ outbox, log: silent, pacer: new Pacer({}, () => {}) });
    await c.set(
      controls({
        cancels: [
          { projectId: 'p1', acceptedBeforeMs: 1000, orderedMs: Date.now() },
          { projectId: 'p1', acceptedBeforeMs: 5000, orderedMs: Date.now() },
        ],
      }),
    );
    expect([0, 1000, 5000, 5001].map((t) => c.isCanceled('p1', t))).toEqual([true, true, true, false]);
    expect(c.isCanceled('p2', 0)).toBe(false);
    expect(c.verdict(item('a', 'p1', 4000))).toBe('drop');
    expect(c.verdict(item('b', 'p2', 4000))).toBe('go');
  });

  it('a push read before the last order (two controls at once) does not take the order back; orders end after 14 days', async () => {
    const c = new GatewayControls({ outbox, log: silent, pacer: new Pacer({}, () => {}) });
    const now = Date.now();
    await c.set(controls({ cancels: [{ projectId: 'p1', acceptedBeforeMs: now, orderedMs: now }] }));
    await c.set(controls({ cancels: [{ projectId: 'p2', acceptedBeforeMs: 10, orderedMs: now - 15 * 86_400_000 }] }));
    expect(c.isCanceled('p1', now)).toBe(true);
    expect(c.isCanceled('p2', 1)).toBe(false);
    // Kept across a restart as merged.
    const again = new GatewayControls({ outbox, log: silent, pacer: new Pacer({}, () => {}) });
    await again.load();
    expect(again.isCanceled('p1', now)).toBe(true);
  });

  it("a push drops the project's held items in one pass over the timer queue, files removed; others stay", async () => {
    const items = [item('x1', 'p1', 10), item('x2', 'p1', 20), item('late', 'p1', 9999), item('other', 'p2', 10)];
    for (const h of items) delay(h);
    const registry: QueueItems = { itemsWhere: ({ projectId }) => items.filter((h) => h.todo.notes.project_id === projectId) };
    const c = new GatewayControls({ outbox, log: silent, pacer: new Pacer({}, () => {}), queueState: registry });
    c.attach(outbound);
    const discard = vi.spyOn(tq, 'discard');
    expect(await c.set(controls({ cancels: [{ projectId: 'p1', acceptedBeforeMs: 100, orderedMs: Date.now() }] }))).toBe(2);
    expect(discard).not.toHaveBeenCalled();
    expect(tq.queue.map((t) => t.id)).toEqual(['late', 'other']);
    expect(['x1', 'x2', 'late', 'other'].map((f) => fs.existsSync(path.join(dir, f)))).toEqual([false, false, true, true]);
    // Nothing of it is delivered when the timers would have fired.
    tq.drain();
    expect(delivered).toEqual(['late', 'other']);
  });

  it('an item the pacing hook DELAYs and drops leaves the timer queue and its file goes', async () => {
    const c = new GatewayControls({ outbox, log: silent, pacer: new Pacer({}, () => {}) });
    c.attach(outbound);
    await c.set(controls({ cancels: [{ projectId: 'p1', acceptedBeforeMs: 100, orderedMs: Date.now() }] }));
    const h = item('d', 'p1', 50);
    delay(h);
    c.drop(h);
    await new Promise((r) => setImmediate(r));
    expect(tq.length()).toBe(0);
    expect(fs.existsSync(h.path)).toBe(false);
  });

  it('a gateway that had controls holds mail queued before its start until the first push, then goes by it', async () => {
    await new GatewayControls({ outbox, log: silent, pacer: new Pacer({}, () => {}) }).set(controls());
    // The restart.
    const c = new GatewayControls({ outbox, log: silent, pacer: new Pacer({}, () => {}) });
    await c.load();
    c.attach(outbound);
    const [old1, old2, fresh] = [item('o1', 'p1', 10, { ageMs: 60_000 }), item('o2', 'p2', 10, { ageMs: 60_000 }), item('f', 'p1', Date.now())];
    expect(c.verdict(fresh)).toBe('go');
    for (const h of [old1, old2]) {
      expect(c.verdict(h)).toBe('wait');
      delay(h);
      c.park(h);
    }
    // The push that was on its way when it died: p1 canceled.
    await c.set(controls({ cancels: [{ projectId: 'p1', acceptedBeforeMs: 100, orderedMs: Date.now() }] }));
    expect(delivered).toEqual(['o2']);
    expect(fs.existsSync(old1.path)).toBe(false);
    expect(tq.length()).toBe(0);
    expect(c.verdict(old1)).toBe('drop');
    expect(c.verdict(old2)).toBe('go');
  });

  it('without a push the gate opens after the time limit, under the persisted controls', async () => {
    await new GatewayControls({ outbox, log: silent, pacer: new Pacer({}, () => {}) }).set(
      controls({ cancels: [{ projectId: 'p1', acceptedBeforeMs: 100, orderedMs: Date.now() }] }),
    );
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const c = new GatewayControls({ outbox, log: silent, pacer: new Pacer({}, () => {}) });
      await c.load();
      c.attach(outbound);
      const old = item('o', 'p2', 10, { ageMs: 60_000 });
      expect(c.verdict(old)).toBe('wait');
      delay(old);
      c.park(old);
      vi.advanceTimersByTime(59_000);
      expect(delivered).toEqual([]);
      vi.advanceTimersByTime(2000);
      expect(delivered).toEqual(['o']);
      expect(c.verdict(old)).toBe('go');
      expect(c.verdict(item('c', 'p1', 50, { ageMs: 60_000 }))).toBe('drop');
    } finally {
      vi.useRealTimers();
    }
  });

  it('a gateway that never had controls (no control pushes to it) holds nothing at start', async () => {
    const c = new GatewayControls({ outbox, log: silent, pacer: new Pacer({}, () => {}) });
    await c.load();
    expect(c.verdict(item('o', 'p1', 10, { ageMs: 60_000 }))).toBe('go');
  });

  it('send-now wakes the deferred items of a provider and/or project off the timer queue, in one pass', async () => {
    const items = [item('g1', 'p1', 1, { provider: 'google' }), item('g2', 'p2', 1, { provider: 'google' }), item('y1', 'p1', 1, { provider: 'yahoo' })];
    for (const h of items) delay(h);
    const registry: QueueItems = {
      itemsWhere: ({ provider, projectId }) =>
        items.filter((h) => (!provider || h.notes.postgate_provider === provider) && (!projectId || h.todo.notes.project_id === projectId)),
    };
    const c = new GatewayControls({ outbox, log: silent, pacer: new Pacer({}, () => {}), queueState: registry });
    c.attach(outbound);
    expect(c.sendNow('google', 'p1')).toBe(1);
    expect(delivered).toEqual(['g1']);
    expect(c.sendNow('', 'p1')).toBe(1);
    expect(c.sendNow('google', '')).toBe(1);
    expect(delivered).toEqual(['g1', 'y1', 'g2']);
    expect(tq.length()).toBe(0);
  });
});
