// core/sqlite/wal-sync.ts: durable commits without blocking the event loop: fdatasyncs of the WAL
// on the thread pool, at most two at once, and one more queued that covers every commit asked for
// meanwhile. On a real database in WAL mode.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { openDatabase, type Db } from '../../../core/sqlite/open.js';
import { WalSync } from '../../../core/sqlite/wal-sync.js';

let dir: string;
let db: Db;
let file: string;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-walsync-'));
  file = path.join(dir, 't.db');
  db = openDatabase(file, [{ id: '0001', sql: 'CREATE TABLE t (v INTEGER)' }]);
});

afterEach(() => {
  vi.restoreAllMocks();
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

it('a burst of commits shares fdatasyncs: two at once, then one for all that waited', async () => {
  const wal = new WalSync(file);
  const spy = vi.spyOn(fs, 'fdatasync');
  const syncs = Array.from({ length: 50 }, (_, i) => {
    db.prepare('INSERT INTO t VALUES (?)').run(i);
    return wal.sync();
  });
  await Promise.all(syncs);
  expect(spy).toHaveBeenCalledTimes(3);
  // Once they are done, the next commit gets its own at once.
  await wal.sync();
  expect(spy).toHaveBeenCalledTimes(4);
  wal.close();
});

it('syncs the file SQLite writes: the -wal beside the database', () => {
  const opened = vi.spyOn(fs, 'openSync');
  const wal = new WalSync(file);
  expect(opened.mock.calls.map((c) => c[0])).toEqual([`${file}-wal`, dir]);
  wal.close();
});

it('a failed fdatasync rejects the commits waiting on it', async () => {
  const wal = new WalSync(file);
  vi.spyOn(fs, 'fdatasync').mockImplementation(((_fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
    setImmediate(() => cb(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' })));
  }) as unknown as typeof fs.fdatasync);
  await expect(wal.sync()).rejects.toThrow(/EIO/);
  wal.close();
});
