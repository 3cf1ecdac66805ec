// The group commit: one transaction per group, tried without savepoints first; a write that
// throws undoes only itself (the group runs again with a savepoint per write), and the hooks
// see the rollback before the second run.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../../core/sqlite/open.js';
import { GroupWriter } from '../../../core/sqlite/group-writer.js';

let dir: string;
let db: Db;
let writer: GroupWriter;
const rows = () => db.prepare('SELECT v FROM t ORDER BY v').pluck().all() as string[];

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-group-'));
  db = openDatabase(path.join(dir, 'g.db'), [{ id: '1', sql: 'CREATE TABLE t (v TEXT PRIMARY KEY)' }]);
  writer = new GroupWriter(db, 1000, false);
});
afterEach(() => {
  writer.close();
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const insert = (v: string) => () => db.prepare('INSERT INTO t (v) VALUES (?)').run(v).changes;

describe('GroupWriter', () => {
  it('commits a group whose writes all succeed in one transaction, each write run once', async () => {
    const runs: string[] = [];
    const write = (v: string) => () => {
      runs.push(v);
      return insert(v)();
    };
    expect(await Promise.all(['a', 'b', 'c'].map((v) => writer.run(write(v))))).toEqual([1, 1, 1]);
    expect(runs).toEqual(['a', 'b', 'c']);
    expect(writer.commits).toBe(1);
    expect(rows()).toEqual(['a', 'b', 'c']);
  });

  it('a write that throws after writing is undone alone; the others commit, their hooks see the rollback first', async () => {
    const events: string[] = [];
    writer.addHooks({
      beginWrite: () => events.push('begin'),
      writeFailed: () => events.push('failed'),
      afterRollback: () => events.push('rollback'),
      beforeCommit: () => events.push('commit'),
    });
    const bad = () => {
      insert('half')();
      throw new Error('refused');
    };
    const results = await Promise.allSettled([writer.run(insert('a')), writer.run(bad), writer.run(insert('b'))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.message).toBe('refused');
    // Nothing of the failed write is left, everything of the others is.
    expect(rows()).toEqual(['a', 'b']);
    // First try: two writes begin, the second throws, the group rolls back; then one savepoint each.
    expect(events).toEqual(['begin', 'begin', 'rollback', 'begin', 'begin', 'failed', 'begin', 'commit']);
    expect(writer.commits).toBe(1);
  });

  it('settles a write that need not wait for the disk once committed, a durable one only once synced', async () => {
    // The WAL's fsync held back until the test lets it go.
    let release = () => {};
    const syncs: number[] = [];
    (writer as unknown as { wal: { sync(): Promise<void>; close(): void } }).wal = {
      close: () => {},
      sync: () => {
        syncs.push(rows().length);
        return new Promise<void>((r) => (release = r));
      },
    };
    const settled: string[] = [];
    const replayable = writer.run(insert('a'), false).then(() => settled.push('a'));
    const durable = writer.run(insert('b')).then(() => settled.push('b'));
    await replayable;
    expect(settled).toEqual(['a']);
    expect(rows()).toEqual(['a', 'b']);
    release();
    await durable;
    expect(settled).toEqual(['a', 'b']);
    // A group of replayable writes only starts no fsync; synced() then covers it.
    await writer.run(insert('c'), false);
    expect(syncs).toEqual([2]);
    const synced = writer.synced();
    expect(syncs).toEqual([2, 3]);
    release();
    await synced;
  });

  it('a group whose transaction fails rejects every write, and the next group still commits', async () => {
    writer.addHooks({
      beforeCommit: () => {
        if (rows().includes('x')) throw new Error('commit refused');
      },
    });
    const failed = await Promise.allSettled([writer.run(insert('x')), writer.run(insert('y'))]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(rows()).toEqual([]);
    expect(await writer.run(insert('z'))).toBe(1);
    expect(rows()).toEqual(['z']);
  });
});
