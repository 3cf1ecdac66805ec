// Fixed-window counters: the interface every limit counts through and its in-process form. Control's
// limiter (control/limits) also shares them through Redis; the gateway's inbound listener counts each
// receiving domain's mail here.
import { clock } from './clock.js';

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
