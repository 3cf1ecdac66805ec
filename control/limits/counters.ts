// Fixed-window counters behind one small interface: in process memory on one machine;
// with POSTGATE_REDIS_URL, shared by every control node through Redis (core/shared-counters.ts).
import { clock } from '../../core/clock.js';
import type { SharedCounters } from '../../core/shared-counters.js';

export interface WindowCount {
  count: number;
  /** When the current window ends (ms since epoch, on core/clock.ts's clock). */
  resetAt: number;
}

export interface Counters {
  /**
   * Adds `by` to the counter `key` and returns its count in the current window, which
   * starts at the key's first hit and lasts `windowMs`. `by` 0 only looks.
   */
  hit(key: string, windowMs: number, by?: number, now?: number): WindowCount;
}

interface Window extends WindowCount {
  start: number;
}

export function memoryCounters(): Counters {
  const windows = new Map<string, Window>();
  let sweepAt = 0;
  return {
    hit(key, windowMs, by = 1, now = clock.now()) {
      if (now > sweepAt) {
        // Drop finished windows now and then, so idle keys do not pile up.
        for (const [k, w] of windows) if (w.resetAt <= now) windows.delete(k);
        sweepAt = now + 10_000;
      }
      let w = windows.get(key);
      // A clock moved back (tests move it) starts a new window too.
      if (!w || now >= w.resetAt || now < w.start) {
        w = { start: now, count: 0, resetAt: now + windowMs };
        // A look opens no window: the first event does.
        if (by === 0) return w;
        windows.set(key, w);
      }
      w.count += by;
      return w;
    },
  };
}

/**
 * The same interface over counters every control node shares (core/shared-counters.ts). `hit`
 * stays a memory operation: the count is the others' count as last read from Redis (every
 * 50 ms), this node's own, and the others' assumed progress since; past a limit the nodes
 * together overshoot by at most about what the others admit in one flush interval. Windows are
 * aligned to the clock (floor(now / windowMs)), not opened by a key's first hit as in
 * memoryCounters(), so that all nodes count the same window. While Redis is away each node
 * allows only its share: its own count × the number of nodes must stay within the limit.
 */
export function sharedCounters(shared: SharedCounters): Counters {
  return {
    hit(key, windowMs, by = 1, now = clock.now()) {
      const c = shared.hit(key, windowMs, by, now);
      return { count: c.judged, resetAt: c.resetAt };
    },
  };
}
