// Counters behind one small interface: in memory on one machine; several
// control nodes would share them through Redis (INCR + PEXPIRE) instead.
export interface WindowCount {
  count: number;
  /** When the current window ends (ms since epoch). */
  resetAt: number;
}

export interface Counters {
  /** Adds `by` to the counter `key` in a fixed window of `windowMs`, and returns the new count. */
  hit(key: string, windowMs: number, by?: number, now?: number): WindowCount;
}

export function memoryCounters(): Counters {
  const windows = new Map<string, WindowCount>();
  let sweepAt = 0;
  return {
    hit(key, windowMs, by = 1, now = Date.now()) {
      if (now > sweepAt) {
        // Drop finished windows now and then, so idle keys do not pile up.
        for (const [k, w] of windows) if (w.resetAt <= now) windows.delete(k);
        sweepAt = now + 10_000;
      }
      let w = windows.get(key);
      if (!w || w.resetAt <= now) {
        w = { count: 0, resetAt: Math.floor(now / windowMs) * windowMs + windowMs };
        windows.set(key, w);
      }
      w.count += by;
      return w;
    },
  };
}
