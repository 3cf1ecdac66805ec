// core/sqlite/checkpointer.ts: what the supervisor does for its children's databases, on real
// SQLite files. The writer is a connection of this process here; in a stack it is another process.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { walProgress, WalCheckpointer } from '../../../core/sqlite/checkpointer.js';
import { HELPED_AUTOCHECKPOINT, openDatabase } from '../../../core/sqlite/open.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-ckpt-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const TABLE = [{ id: '0001', sql: 'CREATE TABLE t (x BLOB NOT NULL)' }];
/** A WAL frame: a 24-byte header and a 4 kB page; the file starts with a 32-byte header. */
const FRAME = 24 + 4096;
const page = Buffer.alloc(4000, 7);

/** A writer in WAL mode: `own` never checkpoints by itself (the test decides when), `helped` as a child the supervisor helps. */
function writer(name: string, mode: 'own' | 'helped' = 'own') {
  const file = path.join(dir, name, 't.db');
  const db = openDatabase(file, TABLE, { externalCheckpoints: mode === 'helped' });
  if (mode === 'own') db.pragma('wal_autocheckpoint = 0');
  const insert = db.prepare('INSERT INTO t (x) VALUES (?)');
  const write = (rows: number) => db.transaction(() => Array.from({ length: rows }, () => insert.run(page)))();
  return { file, db, write };
}

it('reads from the wal-index how many pages wait to be copied', () => {
  const w = writer('pending');
  try {
    expect(walProgress(path.join(dir, 'nowhere.db'))).toBeUndefined();
    w.write(300);
    // Never checkpointed nor restarted: the WAL holds every frame written since it was created.
    const written = (fs.statSync(`${w.file}-wal`).size - 32) / FRAME;
    expect(written).toBeGreaterThanOrEqual(300);
    expect(walProgress(w.file)).toEqual({ frames: written, pending: written });
    w.db.pragma('wal_checkpoint(PASSIVE)');
    expect(walProgress(w.file)).toEqual({ frames: written, pending: 0 });
  } finally {
    w.db.close();
  }
});

it('copies the pages into the database file from its own connection, leaving the writer nothing to copy', () => {
  const w = writer('copy');
  const cp = new WalCheckpointer([w.file], { minFrames: 100 });
  try {
    w.write(50);
    // Under the threshold: not worth two fsyncs yet, but written to (looked at again soon).
    expect(cp.tick()).toBe(true);
    expect(cp.checkpoints).toBe(0);
    // Nothing new since: looked at again later.
    expect(cp.tick()).toBe(false);
    w.write(250);
    expect(cp.tick()).toBe(true);
    expect(cp.checkpoints).toBe(1);
    expect(walProgress(w.file)?.pending).toBe(0);
    const [own] = w.db.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number; checkpointed: number }>;
    expect(own!.checkpointed).toBe(own!.log);
    // The database file alone, without its WAL, holds every row.
    const copy = path.join(dir, 'copy', 'alone.db');
    fs.copyFileSync(w.file, copy);
    const alone = new Database(copy, { readonly: true });
    expect(alone.prepare('SELECT count(*) FROM t').pluck().get()).toBe(300);
    alone.close();
  } finally {
    cp.stop();
    w.db.close();
  }
});

it('copies even a few waiting pages once the WAL nears the writer’s own limit', () => {
  const w = writer('tail');
  const cp = new WalCheckpointer([w.file], { minFrames: 1000, tailFrames: 300 });
  try {
    w.write(250);
    cp.tick();
    expect(cp.checkpoints).toBe(0);
    // Past the tail: 100 waiting pages are enough.
    w.write(100);
    cp.tick();
    expect(cp.checkpoints).toBe(1);
    expect(walProgress(w.file)?.pending).toBe(0);
  } finally {
    cp.stop();
    w.db.close();
  }
});

it('keeps the WAL bounded while the writer never stops: its own checkpoint, past the longer limit, restarts it', async () => {
  const w = writer('bounded', 'helped');
  expect(w.db.pragma('wal_autocheckpoint', { simple: true })).toBe(HELPED_AUTOCHECKPOINT);
  const cp = new WalCheckpointer([w.file], { busyMs: 1, idleMs: 1 });
  cp.start();
  try {
    let rows = 0;
    // Three times the writer's limit, in groups, the checkpointer's timer running between them.
    while (rows < 3 * HELPED_AUTOCHECKPOINT) {
      w.write(40);
      rows += 40;
      await turn();
      await new Promise((r) => setTimeout(r, 1));
    }
    expect(cp.checkpoints).toBeGreaterThan(3);
    // Restarted at least twice: never longer than the limit and the group that crossed it.
    expect(fs.statSync(`${w.file}-wal`).size).toBeLessThanOrEqual(32 + (HELPED_AUTOCHECKPOINT + 200) * FRAME);
    expect(w.db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(rows);
  } finally {
    cp.stop();
    w.db.close();
  }
});

it('lets go of the file when stopped, so the writer is the last connection again', () => {
  const w = writer('stop');
  const cp = new WalCheckpointer([w.file, path.join(dir, 'missing', 't.db')], { minFrames: 1 });
  w.write(20);
  cp.tick();
  expect(cp.checkpoints).toBe(1);
  cp.stop();
  // The last connection to close checkpoints and removes the WAL; with the checkpointer's still open it would stay.
  w.db.close();
  expect(fs.existsSync(`${w.file}-wal`)).toBe(false);
});

it('follows a database whose connections all closed and came back (a restarted child): a new -shm', () => {
  const first = writer('reopen');
  const cp = new WalCheckpointer([first.file], { minFrames: 100 });
  try {
    first.write(20);
    cp.tick();
    expect(cp.checkpoints).toBe(0);
    // The last connection closes: SQLite checkpoints, removes the WAL and unlinks the -shm.
    first.db.close();
    const again = writer('reopen');
    again.write(300);
    cp.tick();
    expect(cp.checkpoints).toBe(1);
    expect(walProgress(again.file)?.pending).toBe(0);
    again.db.close();
  } finally {
    cp.stop();
  }
});

it('says once that a database cannot be checkpointed, and keeps looking at the others', () => {
  const bad = path.join(dir, 'bad', 't.db');
  fs.mkdirSync(path.dirname(bad), { recursive: true });
  // A wal-index saying 500 pages wait, beside a file that is no database.
  fs.writeFileSync(bad, 'not a database'.repeat(400));
  const shm = Buffer.alloc(32768);
  shm[12] = 1;
  shm.writeUInt32LE(500, 16);
  fs.writeFileSync(`${bad}-shm`, shm);
  const good = writer('good');
  good.write(200);
  const errors: string[] = [];
  const cp = new WalCheckpointer([bad, good.file], {
    minFrames: 10,
    onError: (file, err) => errors.push(`${path.basename(path.dirname(file))}: ${err.message}`),
  });
  try {
    cp.tick();
    cp.tick();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^bad: /);
    expect(walProgress(good.file)?.pending).toBe(0);
  } finally {
    cp.stop();
    good.db.close();
  }
});
