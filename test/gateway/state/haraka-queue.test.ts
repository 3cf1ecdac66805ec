// gateway/state/haraka-queue.ts against stand-ins of Haraka's queue module and HMailItem (the real ones
// run in the e2e test's restarted gateway): pushes onto the delivery queue count as ready; at start a
// file due later is read and counted as deferred (receiver) on the timer queue, one due now is left to
// Haraka, an unreadable one falls back to Haraka's way; installing twice wraps once.
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { HMailItem } from '../../../gateway/haraka.js';
import { type HarakaQueueModule, type HMailClass, trackHarakaQueue } from '../../../gateway/state/haraka-queue.js';
import { QueueState } from '../../../gateway/state/tracker.js';

const silent = { info() {}, warn() {}, error() {}, debug() {} } as never;
const NOW = 1_700_000_000_000;
const fileName = (due: number, id: string) => `${NOW}_${due}_0_1_${id}_1_host`;

function fakes(unreadable = new Set<string>()) {
  const pushed: HMailItem[] = [];
  const timers: Array<{ id: string; ms: number; cb: () => void }> = [];
  const haraka: string[] = [];
  class FakeHMail extends EventEmitter {
    notes = {};
    todo: unknown = null;
    next_process: number;
    next_cb = () => {};
    constructor(
      public filename: string,
      public path: string,
    ) {
      super();
      this.next_process = Number(filename.split('_')[1]);
      setImmediate(() => {
        if (unreadable.has(filename)) return this.next_cb();
        this.todo = { uuid: filename, domain: 'gmail.com', rcpt_to: [], notes: { project_id: 'p1' } };
        this.emit('ready');
      });
    }
  }
  const delivery_queue = { push: (h: HMailItem) => void pushed.push(h), length: () => pushed.length };
  const queue: HarakaQueueModule = {
    queue_dir: '/q',
    cur_time: new Date(NOW),
    async _add_file(file: string) {
      haraka.push(file);
      return file;
    },
    temp_fail_queue: { add: (id, ms, cb) => timers.push({ id, ms, cb }) },
    delivery_queue,
  };
  return { pushed, timers, haraka, queue, delivery_queue, HMail: FakeHMail as unknown as HMailClass };
}

const ready = (s: QueueState) => [...s.counts()].map((c) => [c.provider, c.projectId, c.queue.ready, c.queue.deferred.receiver]);

describe('trackHarakaQueue', () => {
  it('counts pushes as ready and the files due later as deferred, read at start', async () => {
    const f = fakes(new Set([fileName(NOW + 9_000, 'bad')]));
    const state = new QueueState();
    trackHarakaQueue({ delivery_queue: f.delivery_queue } as never, state, silent, { queue: f.queue, HMailItem: f.HMail });
    trackHarakaQueue({ delivery_queue: f.delivery_queue } as never, state, silent, { queue: f.queue, HMailItem: f.HMail });
    const later = fileName(NOW + 60_000, 'a');
    const due = fileName(NOW - 1, 'b');
    const bad = fileName(NOW + 9_000, 'bad');
    expect(await f.queue._add_file(later)).toBe(later);
    expect(await f.queue._add_file(due)).toBe(due);
    expect(await f.queue._add_file(bad)).toBe(bad);
    // Due now and unreadable ones go Haraka's way (once: wrapped once).
    expect(f.haraka).toEqual([due, bad]);
    expect(f.timers.map((t) => [t.id, t.ms])).toEqual([[later, 60_000]]);
    expect(ready(state)).toEqual([['google', 'p1', 0, 1]]);
    // Its time comes: pushed onto the delivery queue, the item is ready.
    f.timers[0]!.cb();
    expect(f.pushed).toHaveLength(1);
    expect(ready(state)).toEqual([['google', 'p1', 1, 0]]);
    expect(state.size).toBe(1);
  });
});
