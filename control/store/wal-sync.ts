// Durable commits without blocking the event loop. SQLite runs with
// synchronous=NORMAL, so a commit is a write() into the WAL and no fsync; the
// group writer then fdatasyncs the WAL file on libuv's thread pool and only
// afterwards tells the callers their writes are committed. The event loop keeps
// accepting (and grouping) new writes while the disk works, and one fdatasync
// covers every commit made before it started. fsync is per file, not per file
// descriptor, so syncing our own descriptor of the WAL flushes SQLite's writes.
import fs from 'node:fs';
import path from 'node:path';

export class WalSync {
  private readonly fd: number;
  private running: Promise<void> | null = null;
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
    if (this.queued) return this.queued;
    if (!this.running) return this.start();
    // An fdatasync already running may have started before our commit: wait for the next one.
    this.queued = this.running.then(() => this.start(), () => this.start());
    return this.queued;
  }

  private start(): Promise<void> {
    this.queued = null;
    const run = new Promise<void>((resolve, reject) => fs.fdatasync(this.fd, (err) => (err ? reject(err) : resolve())));
    this.running = run;
    void run.then(
      () => this.running === run && (this.running = null),
      () => this.running === run && (this.running = null),
    );
    return run;
  }

  /** Closes the descriptor once the syncs under way are done. */
  close(): void {
    const last = this.queued ?? this.running;
    const done = () => fs.close(this.fd, () => {});
    if (last) void last.then(done, done);
    else done();
  }
}
