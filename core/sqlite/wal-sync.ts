// Durable commits without blocking the event loop. SQLite runs with
// synchronous=NORMAL, so a commit is a write() into the WAL and no fsync; the
// group writer then fdatasyncs the WAL file on libuv's thread pool and only
// afterwards tells the callers their writes are committed. The event loop keeps
// accepting (and grouping) new writes while the disk works. fsync is per file, not
// per file descriptor, so syncing our own descriptor of the WAL flushes SQLite's
// writes; an fdatasync covers every write made before it started.
import fs from 'node:fs';
import path from 'node:path';

/**
 * fdatasyncs in flight at once. A commit's own fdatasync starts right away (up to
 * this many), instead of waiting for one that began before its write to finish.
 */
const MAX_IN_FLIGHT = 2;

export class WalSync {
  private readonly fd: number;
  private inFlight = 0;
  /** Wakes the one queued fdatasync when a slot frees. */
  private slotFree: (() => void) | null = null;
  private queued: Promise<void> | null = null;

  /** `dbFile` is open in WAL mode by now, so its -wal file exists (SQLite keeps it while a connection is open). */
  constructor(dbFile: string) {
    this.fd = fs.openSync(`${dbFile}-wal`, 'r');
    // The -wal file's directory entry must survive a power loss too.
    const dir = fs.openSync(path.dirname(dbFile), 'r');
    try {
      fs.fsyncSync(dir);
    } finally {
      fs.closeSync(dir);
    }
    fs.fdatasyncSync(this.fd);
  }

  /** Settles once everything committed before the call is on disk. */
  sync(): Promise<void> {
    if (this.inFlight < MAX_IN_FLIGHT) return this.start();
    // All slots busy: one more fdatasync, started when a slot frees, covers every commit until then.
    this.queued ??= new Promise<void>((resolve) => (this.slotFree = resolve)).then(() => {
      this.queued = null;
      return this.start();
    });
    return this.queued;
  }

  private start(): Promise<void> {
    this.inFlight++;
    return new Promise<void>((resolve, reject) =>
      fs.fdatasync(this.fd, (err) => {
        this.inFlight--;
        const wake = this.slotFree;
        this.slotFree = null;
        wake?.();
        if (err) reject(err);
        else resolve();
      }),
    );
  }

  /** Closes the descriptor once the syncs under way are done. */
  close(): void {
    const done = () => (this.inFlight ? setTimeout(done, 5) : fs.close(this.fd, () => {}));
    done();
  }
}
