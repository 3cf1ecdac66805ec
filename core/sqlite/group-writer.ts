// Group commit: writes that arrive in the same turn of the event loop share one
// transaction, and each caller's promise settles only after that transaction has
// committed and, when durable, reached the disk (core/sqlite/wal-sync.ts). A
// failing write rolls back its own savepoint only.
import type { Db } from './open.js';
import { WalSync } from './wal-sync.js';

/** Work that belongs to the group rather than one write (sums written once per commit). */
export interface GroupHooks {
  /** A write of the group starts; what it does may yet be undone by writeFailed. */
  beginWrite?(): void;
  /** The write that began last threw: its savepoint was rolled back. */
  writeFailed?(): void;
  /** Runs inside the transaction after the group's writes, before the commit. */
  beforeCommit?(): void;
  /** The group's transaction rolled back. */
  afterRollback?(): void;
}

interface Pending {
  fn: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export class GroupWriter {
  private queue: Pending[] = [];
  private scheduled = false;
  private closed = false;
  private readonly hooks: GroupHooks[] = [];
  commits = 0;
  writes = 0;

  // Prepared once: a transaction function per write (db.transaction(fn)) costs more than the write.
  private readonly savepoint;
  private readonly release;
  private readonly rollbackTo;

  private readonly wal: WalSync | undefined;

  /** `durable`: settle writes only once their commit is fsynced (storage.synchronous FULL). */
  constructor(
    private readonly db: Db,
    private readonly maxBatch = 1000,
    durable = true,
  ) {
    this.wal = durable && !db.memory ? new WalSync(db.name) : undefined;
    this.savepoint = db.prepare('SAVEPOINT write');
    this.release = db.prepare('RELEASE write');
    this.rollbackTo = db.prepare('ROLLBACK TO write');
  }

  addHooks(h: GroupHooks): void {
    this.hooks.push(h);
  }

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
            // A savepoint per write: a failure undoes this write only.
            this.savepoint.run();
            for (const h of this.hooks) h.beginWrite?.();
            try {
              results.push({ ok: true, value: p.fn() });
              this.release.run();
            } catch (err) {
              this.rollbackTo.run();
              this.release.run();
              for (const h of this.hooks) h.writeFailed?.();
              results.push({ ok: false, value: err });
            }
          }
          for (const h of this.hooks) h.beforeCommit?.();
        })();
      } catch (err) {
        for (const h of this.hooks) h.afterRollback?.();
        for (const p of batch) p.reject(err);
        continue;
      }
      this.commits++;
      this.writes += batch.length;
      const settle = () => {
        for (const [i, p] of batch.entries()) {
          const r = results[i]!;
          if (r.ok) p.resolve(r.value);
          else p.reject(r.value);
        }
      };
      if (!this.wal) settle();
      else
        this.wal.sync().then(settle, (err) => {
          for (const p of batch) p.reject(err);
        });
    }
  }

  close(): void {
    this.flush();
    this.closed = true;
    this.wal?.close();
  }
}
