// Fixed-window counters behind one small interface: in process memory on one machine;
// with POSTGATE_REDIS_URL, shared by every control node through Redis (core/shared-counters.ts).
import { clock } from '../../core/clock.js';
import type { SharedCounters } from '../../core/shared-counters.js';

// The counters' interface and the in-memory one live in core (the gateway's inbound rate uses them too).
export { memoryCounters, type Counters, type WindowCount } from '../../core/window-counters.js';
import type { Counters } from '../../core/window-counters.js';

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
