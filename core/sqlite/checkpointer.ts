// Checkpoints from outside the process that writes the database. In WAL mode a commit only
// appends pages to the -wal file; a checkpoint copies them into the database file (a read
// and a write per page, and an fsync of each file). SQLite runs it in the writing connection
// once the WAL holds 1,000 pages, on control's and the gateway's event loop: 5-6 µs of CPU per
// accepted email in a batch of 100 (bench/sqlite-insert.ts), about an eighth of what control
// spends on one, and 5-15 ms during which no request is answered.
//
// The supervisor runs this on its own otherwise idle thread (another core). It reads from the
// wal-index (the -shm file) how long the WAL is and how much of it was not copied yet, and runs
// a PASSIVE checkpoint, which never waits for the writer nor makes it wait, each time MIN_FRAMES
// pages wait: as often as SQLite would have in the writer. Only a writer restarts the WAL from its
// start, and only once every page in it was copied, so the writing process still checkpoints
// itself, past a longer WAL (open.ts, HELPED_AUTOCHECKPOINT); as the WAL nears that length this
// copies whatever waits, and the writer's own checkpoint finds little left.
import fs from 'node:fs';
import os from 'node:os';
import Database from 'better-sqlite3';
import { HELPED_AUTOCHECKPOINT } from './open.js';

/**
 * Pages left to copy before a checkpoint is worth its two fsyncs and its copies: SQLite's own
 * interval. Checkpointing every 128 pages instead copied the pages every commit rewrites (the
 * ends of the indexes) eight times as often and fsynced as often: POST /v1/emails lost 15%.
 */
export const MIN_FRAMES = 1000;
/** Past this WAL length (in pages) anything waiting is copied, so the writer's checkpoint at HELPED_AUTOCHECKPOINT finds little. */
const TAIL_FRAMES = Math.floor(HELPED_AUTOCHECKPOINT * 0.75);
/** Fewest pages worth a checkpoint near the writer's limit. */
const TAIL_MIN_FRAMES = 16;
/** Looks again this soon while the WAL grows. */
const BUSY_MS = 20;
/** And this seldom while it does not. */
const IDLE_MS = 500;

const littleEndian = os.endianness() === 'LE';

export interface WalProgress {
  /** Pages in the WAL (since its last restart). */
  frames: number;
  /** Of those, not copied into the database yet. */
  pending: number;
}

/** The wal-index header's first 100 bytes, read into one buffer for every look. */
const header = Buffer.alloc(100);
const u32 = (b: Buffer, offset: number): number => (littleEndian ? b.readUInt32LE(offset) : b.readUInt32BE(offset));

/**
 * How long the WAL is and how much of it waits to be copied, from the wal-index header read
 * through `fd`, a descriptor of the -shm file (sqlite.org/walformat.html: mxFrame at byte 16 of the
 * first header copy, nBackfill at byte 96, in the machine's byte order); undefined when it holds no
 * initialised header. A hint: a read racing a commit may be a frame behind.
 */
function readProgress(fd: number): WalProgress | undefined {
  if (fs.readSync(fd, header, 0, header.length, 0) < header.length || header[12] !== 1) return undefined;
  const frames = u32(header, 16);
  return { frames, pending: Math.max(0, frames - u32(header, 96)) };
}

/** A read-only descriptor of the database's -shm, or undefined while it has none (no connection yet). */
function openShm(dbFile: string): number | undefined {
  try {
    return fs.openSync(`${dbFile}-shm`, 'r');
  } catch {
    return undefined;
  }
}

/**
 * readProgress for a database file, opening and closing its -shm. Closing a descriptor drops every
 * POSIX lock the process holds on that file, SQLite's included (sqlite.org/howtocorrupt.html, 2.2):
 * only for a process with no connection to the database, or one whose connections live in it alone
 * (tests). The checkpointer keeps its descriptor open instead.
 */
export function walProgress(dbFile: string): WalProgress | undefined {
  const fd = openShm(dbFile);
  if (fd === undefined) return undefined;
  try {
    return readProgress(fd);
  } finally {
    fs.closeSync(fd);
  }
}

export interface CheckpointerOptions {
  minFrames?: number;
  /** Past this WAL length, TAIL_MIN_FRAMES waiting are enough. */
  tailFrames?: number;
  busyMs?: number;
  idleMs?: number;
  /** A database that could not be checkpointed; said once until it works again. */
  onError?: (file: string, err: Error) => void;
  /** A checkpoint ran: the WAL's length and how much of it is now in the database file (pages). */
  onCheckpoint?: (file: string, frames: number, copied: number) => void;
}

export class WalCheckpointer {
  /** Checkpoints run, since start. */
  checkpoints = 0;
  private readonly dbs = new Map<string, Database.Database>();
  private readonly failing = new Set<string>();
  /** The WAL length each file had at the last look. */
  private readonly seen = new Map<string, number>();
  /** Each file's -shm, open for as long as this runs: closing it would drop the connection's locks on it (walProgress). */
  private readonly shm = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private readonly minFrames: number;
  private readonly tailFrames: number;
  private readonly busyMs: number;
  private readonly idleMs: number;

  constructor(
    private readonly files: readonly string[],
    private readonly opts: CheckpointerOptions = {},
  ) {
    this.minFrames = opts.minFrames ?? MIN_FRAMES;
    this.tailFrames = opts.tailFrames ?? TAIL_FRAMES;
    this.busyMs = opts.busyMs ?? BUSY_MS;
    this.idleMs = opts.idleMs ?? IDLE_MS;
  }

  start(): void {
    const next = () => {
      this.timer = setTimeout(next, this.tick() ? this.busyMs : this.idleMs);
      // It never keeps the supervisor alive by itself.
      this.timer.unref();
    };
    next();
  }

  stop(): void {
    clearTimeout(this.timer);
    for (const file of [...this.dbs.keys()]) this.close(file);
    // The connections are gone: closing the descriptors drops no lock anyone relies on.
    for (const fd of this.shm.values()) fs.closeSync(fd);
    this.shm.clear();
  }

  /** One look at each database; true when one of them is being written (it looks again soon). */
  tick(): boolean {
    let busy = false;
    for (const file of this.files) {
      const wal = this.progress(file);
      if (!wal) continue;
      if (this.seen.get(file) !== wal.frames) busy = true;
      this.seen.set(file, wal.frames);
      if (wal.pending < (wal.frames >= this.tailFrames ? TAIL_MIN_FRAMES : this.minFrames)) continue;
      try {
        const [r] = this.open(file).pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number; checkpointed: number }>;
        this.checkpoints++;
        this.opts.onCheckpoint?.(file, r!.log, r!.checkpointed);
        this.failing.delete(file);
      } catch (err) {
        this.close(file);
        // Busy: another connection is recovering or checkpointing the WAL; the next look retries.
        if ((err as { code?: string }).code === 'SQLITE_BUSY' || this.failing.has(file)) continue;
        this.failing.add(file);
        this.opts.onError?.(file, err as Error);
      }
    }
    return busy;
  }

  private progress(file: string): WalProgress | undefined {
    let fd = this.shm.get(file);
    // Unlinked: the last connection closed and removed it (possible only while this had none open); a new one comes with the next.
    if (fd !== undefined && !this.dbs.has(file) && fs.fstatSync(fd).nlink === 0) {
      fs.closeSync(fd);
      this.shm.delete(file);
      fd = undefined;
    }
    if (fd === undefined) {
      fd = openShm(file);
      if (fd === undefined) return undefined;
      this.shm.set(file, fd);
    }
    return readProgress(fd);
  }

  private open(file: string): Database.Database {
    let db = this.dbs.get(file);
    if (!db) {
      // Never creates a database and never waits for a lock: the writer's process owns the file.
      db = new Database(file, { fileMustExist: true, timeout: 0 });
      // A checkpoint copies pages from the WAL without the page cache.
      db.pragma('cache_size = -64');
      this.dbs.set(file, db);
    }
    return db;
  }

  private close(file: string): void {
    const db = this.dbs.get(file);
    this.dbs.delete(file);
    try {
      db?.close();
    } catch {
      // Closing a connection that failed can fail again; it is dropped either way.
    }
  }
}
