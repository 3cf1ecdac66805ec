// Where queue items enter the live state (gateway/state/tracker.ts) from Haraka itself:
// - every push onto the delivery queue (a new message, a retry come due, mail woken) makes the item
//   ready: queue-file.ts, send_email, the timer queue and the queue load at start all push there;
// - at start Haraka puts queue files due later on its timer queue by name only (outbound/queue.js
//   _add_file), so the gateway would not know what it holds until each comes due. Those are read
//   now (as Haraka's own _add_hmail does for items it loads), a bounded number at a time, and
//   counted as deferred by the receiver (only a remote deferral renames a file into the future).
import path from 'node:path';
import type { HarakaOutbound, HMailItem } from '../haraka.js';
import type { Logger } from '../../core/log.js';
import type { QueueState } from './tracker.js';

/** Haraka's outbound/queue module, the parts used here (Haraka 3.3.4). */
export interface HarakaQueueModule {
  queue_dir: string;
  cur_time?: Date;
  _add_file(file: string): Promise<string | null | undefined>;
  temp_fail_queue: { add(id: string, ms: number, cb: () => void): unknown };
  delivery_queue: { push(hmail: HMailItem): void };
}

export type HMailClass = new (
  filename: string,
  path: string,
  notes?: object,
) => HMailItem & {
  next_process: number;
  once(ev: string, fn: (...args: unknown[]) => void): unknown;
};

/** Queue files read at once at start (Haraka loads due files with a similar bound). */
const LOAD_CONCURRENCY = 64;

const TRACKED = Symbol.for('postgate.queueState');

export function trackHarakaQueue(
  outbound: Pick<HarakaOutbound, 'delivery_queue'>,
  state: QueueState,
  log: Logger,
  start?: { queue: HarakaQueueModule; HMailItem: HMailClass },
): void {
  const dq = outbound.delivery_queue as HarakaOutbound['delivery_queue'] & { [TRACKED]?: boolean };
  if (!dq[TRACKED]) {
    dq[TRACKED] = true;
    const push = dq.push;
    dq.push = function (this: unknown, hmail: HMailItem) {
      try {
        state.queued(hmail);
      } catch (err) {
        log.error({ err }, 'delivery state: could not count a queued item');
      }
      return push.call(this, hmail);
    };
  }
  if (!start) return;
  const q = start.queue as HarakaQueueModule & { [TRACKED]?: boolean };
  if (q[TRACKED]) return;
  q[TRACKED] = true;
  const addFile = q._add_file;
  let running = 0;
  const waiting: Array<() => void> = [];
  const slot = async () => {
    if (running >= LOAD_CONCURRENCY) await new Promise<void>((r) => waiting.push(r));
    running++;
  };
  const free = () => {
    running--;
    waiting.shift()?.();
  };
  q._add_file = async function (this: unknown, file: string) {
    const due = Number(file.split('_')[1]);
    const now = q.cur_time?.getTime() ?? Date.now();
    // Due now, or a name we cannot read: Haraka's own way.
    if (!Number.isFinite(due) || due <= now) return addFile.call(this, file);
    await slot();
    try {
      const hmail = new start.HMailItem(file, path.join(q.queue_dir, file));
      const h = hmail as typeof hmail & { next_cb: () => void };
      const ready = await new Promise<boolean>((resolve) => {
        hmail.once('ready', () => resolve(true));
        hmail.once('error', () => resolve(false));
        // An unreadable file ends the item through next_cb, without an event.
        h.next_cb = () => resolve(false);
      });
      h.next_cb = () => {};
      if (!ready) return addFile.call(this, file);
      state.deferred(hmail, 'receiver');
      q.temp_fail_queue.add(hmail.filename, Math.max(0, hmail.next_process - now), () => q.delivery_queue.push(hmail));
      return file;
    } finally {
      free();
    }
  };
}
