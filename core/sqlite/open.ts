// Opening a SQLite database: WAL, pragmas, versioned migrations applied at start.
// Used by the stores that keep data in SQLite (control/store/sqlite, gateway/outbox).
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

export type Db = Database.Database;

/** SQLite's page cache per connection, in KiB. */
const CACHE_KIB = 4000;

export interface Migration {
  /** Stable id, recorded once applied; never change an applied migration, add a new one (an id that must change goes through OpenOptions.renamedMigrations). */
  id: string;
  sql: string;
}

/**
 * The WAL length (in pages) at which the writing connection checkpoints itself when the supervisor
 * checkpoints for it (core/sqlite/checkpointer.ts): long enough that the supervisor has copied nearly
 * every page by then, so the writer's own checkpoint only restarts the WAL. SQLite's is 1,000.
 */
export const HELPED_AUTOCHECKPOINT = 4000;

export interface OpenOptions {
  /** Another process checkpoints this database (the supervisor, POSTGATE_WAL_CHECKPOINTER). */
  externalCheckpoints?: boolean;
  /**
   * Ids applied steps were once recorded under → the ids they carry now: renamed in
   * schema_migrations before anything is applied, so a renamed step never runs twice.
   */
  renamedMigrations?: Readonly<Record<string, string>>;
}

export function openDatabase(file: string, migrations: readonly Migration[], opts: OpenOptions = {}): Db {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  // SQLite itself fsyncs the WAL only at checkpoints; with synchronous FULL the group
  // writer fsyncs each commit off the event loop before answering (core/sqlite/wal-sync.ts).
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  // Every write of a group runs in its own savepoint (group-writer.ts), whose statement journal
  // otherwise goes to a temporary file: in memory it halves the cost of an accepted email
  // (78 → 44 µs of CPU for its three inserts, bench/sqlite-insert.ts). It holds only the
  // pages one write touches, and sorts for queries without an index.
  db.pragma('temp_store = MEMORY');
  // better-sqlite3 builds SQLite with a 16 MB page cache per connection, and it fills as the database
  // grows: control's memory outside its JavaScript heap grew with every round of bench:deliverability
  // (peak 111-112 MB after 20,000 messages). The hot pages (the tails of time-ordered indexes, recent
  // emails) fit in 4 MB, and the rest comes from the OS page cache: control's peak 93-94 MB, with no
  // change in CPU per message or per batch beyond the machine's spread (alternating runs).
  db.pragma(`cache_size = -${CACHE_KIB}`);
  if (opts.externalCheckpoints) db.pragma(`wal_autocheckpoint = ${HELPED_AUTOCHECKPOINT}`);
  migrate(db, migrations, opts.renamedMigrations ?? {});
  return db;
}

function migrate(db: Db, migrations: readonly Migration[], renamed: Readonly<Record<string, string>>): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)');
  const rename = db.prepare('UPDATE schema_migrations SET id = ? WHERE id = ?');
  db.transaction(() => {
    for (const [from, to] of Object.entries(renamed)) rename.run(to, from);
  })();
  const applied = new Set(db.prepare('SELECT id FROM schema_migrations').pluck().all() as string[]);
  const record = db.prepare('INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)');
  for (const m of migrations) {
    if (applied.has(m.id)) continue;
    db.transaction(() => {
      db.exec(m.sql);
      record.run(m.id, Date.now());
    })();
  }
}
