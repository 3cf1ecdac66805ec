// The PostgreSQL schema steps on a database this file creates (POSTGATE_TEST_DATABASE_URL): a
// database migrated before the steps were renumbered (control/store/renamed-migrations.ts), built
// here by running the same steps under their old ids, opens without applying any of them again.
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../../../control/store/open.js';
import { PgDb } from '../../../../control/store/postgres/db.js';
import { migrate, migrations, type PgMigration } from '../../../../control/store/postgres/migrations.js';
import { RENAMED_MIGRATIONS } from '../../../../control/store/renamed-migrations.js';
import { localInvalidator } from '../../../../core/invalidation.js';
import { createTestDatabase, type TestDatabase } from '../../../helpers/cluster.js';

const former = Object.fromEntries(Object.entries(RENAMED_MIGRATIONS).map(([old, now]) => [now, old]));
const underOldIds = (steps: readonly PgMigration[]) => steps.map((m) => ({ ...m, id: former[m.id] ?? m.id }));
const open = (url: string) => openStore({ dataDir: '', storage: { synchronous: 'FULL', maxBatch: 100 }, databaseUrl: url }, localInvalidator());

let db: TestDatabase;
let client: pg.Client;

beforeEach(async () => {
  db = await createTestDatabase('pg_migrations');
  client = new pg.Client({ connectionString: db.url });
  await client.connect();
});

afterEach(async () => {
  await client?.end();
  await db?.drop();
});

/** What the code before the renumbering did: each step, then its id, in one transaction. */
async function migrateAsBefore(steps: readonly PgMigration[]): Promise<void> {
  await client.query('BEGIN');
  await client.query('CREATE TABLE schema_migrations (id TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)');
  for (const m of steps) {
    await client.query(m.sql);
    await client.query('INSERT INTO schema_migrations (id, applied_at) VALUES ($1, $2)', [m.id, 1]);
  }
  await client.query('COMMIT');
}

const recorded = async () => (await client.query<{ id: string }>('SELECT id FROM schema_migrations ORDER BY id')).rows.map((r) => r.id);

describe('postgres: a database migrated before the steps were renumbered', () => {
  it('opens without applying any step again, its data kept and its rows renamed to the new ids', async () => {
    await migrateAsBefore(underOldIds(migrations));
    expect(await recorded()).toContain('auth_0003_audit_log');
    await client.query("INSERT INTO projects (id, slug, name, status, plan, created_at) VALUES ('p1', 'p1', 'P', 'active', 'free', 1)");

    // What this test guards against: the current ids alone would run the renamed steps again.
    const bare = new PgDb(db.url);
    try {
      await expect(bare.tx((tx) => migrate(tx, migrations, {}))).rejects.toThrow(/already exists/);
    } finally {
      await bare.close();
    }

    const store = await open(db.url);
    try {
      expect((await store.projects.bySlug('p1'))?.name).toBe('P');
    } finally {
      await store.close();
    }
    // Sorted by id is the order they apply in.
    expect(await recorded()).toEqual(migrations.map((m) => m.id));
  });

  it('a database that stopped partway applies the rest once, recorded under the new ids', async () => {
    await migrateAsBefore(underOldIds(migrations.slice(0, migrations.findIndex((m) => m.id === '0009_webhook_enabled') + 1)));
    expect(await recorded()).toContain('0008_webhook_enabled');

    await (await open(db.url)).close();
    expect(await recorded()).toEqual(migrations.map((m) => m.id));
    const tables = await client.query(
      "SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public' AND tablename IN ('auth_audit', 'idempotency_keys', 'email_attachments')",
    );
    expect(tables.rows[0].n).toBe(3);
  });
});

describe('postgres: the browser binding becomes the default (0015)', () => {
  it('keeps it off, written down, for the projects that existed before; a new project has it unset (on)', async () => {
    const before = migrations.slice(
      0,
      migrations.findIndex((m) => m.id === '0015_auth_code_verifier_default'),
    );
    const bare = new PgDb(db.url);
    try {
      await bare.tx((tx) => migrate(tx, before));
    } finally {
      await bare.close();
    }
    await client.query(
      "INSERT INTO projects (id, slug, name, status, plan, created_at) VALUES ('p1', 'p1', 'P1', 'active', 'free', 1), ('p2', 'p2', 'P2', 'active', 'free', 1)",
    );
    await client.query("INSERT INTO auth_settings (project_id, session_ttl_seconds, require_code_verifier, updated_at) VALUES ('p2', 3600, true, 1)");

    const store = await open(db.url);
    try {
      expect((await store.signIn.settings('p1')).requireCodeVerifier).toBe(false);
      expect(await store.signIn.settings('p2')).toMatchObject({ sessionTtlSeconds: 3600, requireCodeVerifier: true });
      await store.projects.create({ id: 'p3', slug: 'p3', name: 'P3', plan: 'free', createdAt: 2 }, []);
      expect((await store.signIn.settings('p3')).requireCodeVerifier).toBeNull();
    } finally {
      await store.close();
    }
  });
});
