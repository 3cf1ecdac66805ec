// How core/sqlite/open.ts opens a database: the settings the group writer, the savepoints and the
// memory figures rely on, read back from SQLite itself; and how it applies schema steps.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { openDatabase } from '../../../core/sqlite/open.js';

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

it('applies each step once, in list order, and a failing step leaves neither its changes nor its record', () => {
  const file = path.join(dir, 'steps.db');
  const steps = [
    { id: '0001_a', sql: 'CREATE TABLE a (x INTEGER)' },
    { id: '0002_b', sql: 'CREATE TABLE b (x INTEGER)' },
  ];
  openDatabase(file, steps).close();
  // Opening again applies nothing (CREATE TABLE a second time would throw).
  openDatabase(file, steps).close();
  const broken = [...steps, { id: '0003_c', sql: 'CREATE TABLE c (x INTEGER); CREATE TABLE a (y INTEGER)' }];
  expect(() => openDatabase(file, broken)).toThrow(/table a already exists/);
  const db = openDatabase(file, steps);
  try {
    expect(db.prepare('SELECT id FROM schema_migrations ORDER BY rowid').pluck().all()).toEqual(['0001_a', '0002_b']);
    expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'c'").pluck().get()).toBe(0);
  } finally {
    db.close();
  }
});

it('renames steps recorded under an old id before applying anything: a renamed step does not run again', () => {
  const file = path.join(dir, 'renamed.db');
  openDatabase(file, [{ id: 'x_0001_a', sql: 'CREATE TABLE a (x INTEGER)' }]).close();
  const now = [
    { id: '0001_a', sql: 'CREATE TABLE a (x INTEGER)' },
    { id: '0002_b', sql: 'CREATE TABLE b (x INTEGER)' },
  ];
  expect(() => openDatabase(file, now).close()).toThrow(/table a already exists/);
  // An old id the database never had is nothing to rename.
  const db = openDatabase(file, now, { renamedMigrations: { x_0001_a: '0001_a', never_applied: '0009_z' } });
  try {
    expect(db.prepare('SELECT id FROM schema_migrations ORDER BY rowid').pluck().all()).toEqual(['0001_a', '0002_b']);
  } finally {
    db.close();
  }
});
