// Hits are recorded off the request path: the pixel and the redirect answer at once, and the hits
// they saw are written in batches (one store transaction per batch, every FLUSH_MS or BATCH hits).
// Durable enough: a crash loses at most the last FLUSH_MS of hits (opens and clicks, never mail);
// a store that fails keeps them (bounded by MAX_PENDING, the oldest dropped first) and tries again.
import type { Logger } from '../../core/log.js';
import type { Tracking, TrackingHit } from '../store/index.js';

export const FLUSH_MS = 200;
export const BATCH = 500;
export const MAX_PENDING = 100_000;

export class TrackingRecorder {
  private pending: TrackingHit[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private failing = false;
  /** Hits dropped because the store could not keep up (metrics, tests). */
  dropped = 0;
  recorded = 0;

  constructor(
    private readonly store: Tracking,
    private readonly log: Logger,
    private readonly flushMs = FLUSH_MS,
  ) {}

  add(hit: TrackingHit): void {
    this.pending.push(hit);
    this.bound();
    if (this.pending.length >= BATCH) {
      // A flush under way takes what arrives meanwhile too.
      if (!this.flushing) void this.flush();
    } else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  /** At most MAX_PENDING hits wait: the oldest go first. */
  private bound(): void {
    const over = this.pending.length - MAX_PENDING;
    if (over <= 0) return;
    this.pending.splice(0, over);
    this.dropped += over;
  }

  /** Writes what is pending, a batch per transaction; resolves once it is written (or kept for a retry). */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing.then(() => (this.pending.length ? this.flush() : undefined));
    clearTimeout(this.timer);
    this.timer = undefined;
    this.flushing = (async () => {
      while (this.pending.length) {
        const batch = this.pending.splice(0, BATCH);
        try {
          await this.store.record(batch);
          this.recorded += batch.length;
          if (this.failing) this.log.info('tracking hits recorded again');
          this.failing = false;
        } catch (err) {
          this.pending.unshift(...batch);
          this.bound();
          if (!this.failing) this.log.warn({ err: (err as Error).message, pending: this.pending.length }, 'cannot record tracking hits; will retry');
          this.failing = true;
          this.timer = setTimeout(() => void this.flush(), 1000);
          this.timer.unref();
          return;
        }
      }
    })().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  /** Writes everything still pending (at shutdown). */
  async close(): Promise<void> {
    await this.flush();
    clearTimeout(this.timer);
  }
}
