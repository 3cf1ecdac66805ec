// Group commit: writes that arrive in the same turn of the event loop share one
// transaction, and each caller's promise settles only after that transaction has
// committed and, when durable, reached the disk (core/sqlite/wal-sync.ts). A
// failing write is undone alone (the group runs again with a savepoint per write).
// Bookkeeping that can be replayed (delivery events a gateway keeps until they are
// acknowledged, dispatch marks a gateway answers as duplicates) is written without
// waiting for the disk: its group is fsynced only if another write in it needs that,
// and whoever must know it is on disk asks synced().
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

interface Result {
  ok: boolean;
  value: unknown;
}

interface Pending {
  fn: () => unknown;
  /** Settles only once on disk (else once committed). */
  durable: boolean;
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

  /**
   * `durable` false: settles once committed, before the commit is on disk, for writes that a power
   * loss may undo because they are replayed (see synced()). A process crash never undoes them.
   */
  run<T>(fn: () => T, durable = true): Promise<T> {
    if (this.closed) return Promise.reject(new Error('store is closed'));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, durable, resolve: resolve as (v: unknown) => void, reject });
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
      let results: Result[];
      try {
        // First without savepoints (two statements per write, about a quarter of an email's insert
        // cost); a write that throws rolls the group back whole, and the group runs again with a
        // savepoint per write, so the failure undoes that write only. Every write's effects outside
        // the database are undone by the hooks' afterRollback, so running it again is safe.
        results = this.commit(batch, false) ?? this.commit(batch, true);
      } catch (err) {
        for (const p of batch) p.reject(err);
        continue;
      }
      this.commits++;
      this.writes += batch.length;
      const settle = (durable: boolean) => {
        for (const [i, p] of batch.entries()) {
          if (p.durable !== durable) continue;
          const r = results[i]!;
          if (r.ok) p.resolve(r.value);
          else p.reject(r.value);
        }
      };
      settle(false);
      if (batch.some((p) => p.durable))
        this.synced().then(
          () => settle(true),
          (err) => {
            for (const p of batch) if (p.durable) p.reject(err);
          },
        );
    }
  }

  /** Settles once every write committed before the call is on disk (at once when commits are not fsynced). */
  synced(): Promise<void> {
    return this.wal ? this.wal.sync() : Promise.resolve();
  }

  /**
   * One transaction for the group. With `savepoints`, each write in its own: a failing write is
   * undone alone. Without: undefined when a write threw (the group was rolled back). Throws when
   * the transaction itself failed.
   */
  private commit(batch: Pending[], savepoints: true): Result[];
  private commit(batch: Pending[], savepoints: false): Result[] | undefined;
  private commit(batch: Pending[], savepoints: boolean): Result[] | undefined {
    const results: Result[] = [];
    let writeThrew = false;
    try {
      this.db.transaction(() => {
        for (const p of batch) {
          if (!savepoints) {
            for (const h of this.hooks) h.beginWrite?.();
            try {
              results.push({ ok: true, value: p.fn() });
            } catch (err) {
              writeThrew = true;
              throw err;
            }
            continue;
          }
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
      if (writeThrew) return undefined;
      throw err;
    }
    return results;
  }

  close(): void {
    this.flush();
    this.closed = true;
    this.wal?.close();
  }
}
