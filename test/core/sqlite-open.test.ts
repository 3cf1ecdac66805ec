// How core/sqlite/open.ts opens a database: the settings the group writer, the savepoints and the
// memory figures rely on, read back from SQLite itself.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { openDatabase } from '../../core/sqlite/open.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-open-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

it('opens in WAL mode with foreign keys, in-memory statement journals and a 4 MB page cache (not better-sqlite3’s 16 MB)', () => {
  const db = openDatabase(path.join(dir, 'a', 't.db'), [{ id: '0001', sql: 'CREATE TABLE t (x INTEGER)' }]);
  try {
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(db.pragma('temp_store', { simple: true })).toBe(2);
    // Negative: KiB (SQLite's way of giving the size in memory rather than in pages).
    expect(db.pragma('cache_size', { simple: true })).toBe(-4000);
    // The migration ran once and is recorded.
    expect(db.prepare('SELECT id FROM schema_migrations').pluck().all()).toEqual(['0001']);
  } finally {
    db.close();
  }
});
