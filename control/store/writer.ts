// Group commit: writes that arrive in the same turn of the event loop share one
// transaction (one WAL fsync), and each caller's promise settles only after that
// transaction has committed. A failing write rolls back its own savepoint only.
import type { Db } from './db.js';

interface Pending {
  fn: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export class GroupWriter {
  private queue: Pending[] = [];
  private scheduled = false;
  private closed = false;
  commits = 0;
  writes = 0;

  constructor(private readonly db: Db, private readonly maxBatch = 1000) {}

  run<T>(fn: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new Error('store is closed'));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Commits everything queued now. */
  flush(): void {
    this.scheduled = false;
    while (this.queue.length) {
      const batch = this.queue.splice(0, this.maxBatch);
      const results: Array<{ ok: boolean; value: unknown }> = [];
      try {
        this.db.transaction(() => {
          for (const p of batch) {
            try {
              // A nested transaction is a savepoint: a failure undoes this write only.
              results.push({ ok: true, value: this.db.transaction(p.fn)() });
            } catch (err) {
              results.push({ ok: false, value: err });
            }
          }
        })();
      } catch (err) {
        for (const p of batch) p.reject(err);
        continue;
      }
      this.commits++;
      this.writes += batch.length;
      batch.forEach((p, i) => (results[i]!.ok ? p.resolve(results[i]!.value) : p.reject(results[i]!.value)));
    }
  }

  close(): void {
    this.flush();
    this.closed = true;
  }
}
