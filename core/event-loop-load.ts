// How busy this process's event loop is, for decisions that should yield only when the loop is
// saturated (control's dispatcher) and for /metrics.
import { performance } from 'node:perf_hooks';

/** The share of time the event loop was busy, over the last `windowMs` or more (read when asked). */
export function eventLoopLoad(windowMs = 250): () => number {
  let mark = performance.eventLoopUtilization();
  let at = performance.now();
  let last = 0;
  return () => {
    if (performance.now() - at >= windowMs) {
      const now = performance.eventLoopUtilization();
      last = performance.eventLoopUtilization(now, mark).utilization;
      mark = now;
      at = performance.now();
    }
    return last;
  };
}
