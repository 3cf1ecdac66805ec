// The store conformance suite on the PostgreSQL backend, in a database this run creates and
// drops (POSTGATE_TEST_DATABASE_URL names the server; .ci/run sets it). Also what only a
// shared database has: several nodes at once, migrations raced by nodes starting together,
// one clear line for a database that cannot be opened, and a lost connection answered as
// "unavailable" and then recovered from without a restart.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../../control/store/index.js';
import { openStore } from '../../../control/store/open.js';
import { migrations } from '../../../control/store/postgres/migrations.js';
import { localInvalidator } from '../../../core/invalidation.js';
import { StoreUnavailableError } from '../../../core/errors.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/cluster.js';
import { startTcpProxy } from '../../helpers/tcp-proxy.js';
import { describeSeveralNodes, describeStore } from './conformance.js';

const storage = { synchronous: 'FULL' as const, maxBatch: 1000 };
const open = (databaseUrl: string) => openStore({ dataDir: '', storage, databaseUrl }, localInvalidator());

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase('pg_test');
});
afterAll(async () => {
  await db?.drop();
});

/** Every table emptied: each case starts from a fresh, empty store on the run's database. */
const empty = async () => {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    const tables = (await c.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'")).rows.map(
      (r) => `"${r.tablename}"`,
    );
    if (tables.length) await c.query(`TRUNCATE ${tables.join(', ')} RESTART IDENTITY CASCADE`);
  } finally {
    await c.end();
  }
};

describeStore('postgres', async () => {
  let store = await open(db.url);
  await empty();
  return {
    store,
    reopen: async () => {
      await store.close();
      store = await open(db.url);
      return store;
    },
    cleanup: () => store.close(),
  };
});

describeSeveralNodes('postgres', async () => {
  await empty();
  const nodes: Store[] = [];
  return {
    node: async () => {
      const s = await open(db.url);
      nodes.push(s);
      return s;
    },
    // A node a case closed itself is closed again harmlessly.
    cleanup: async () => void (await Promise.all(nodes.map((s) => s.close()))),
  };
});

describe('postgres: opening', () => {
  it('two nodes starting at once on an empty database both open it; each migration is applied once', async () => {
    const fresh = await createTestDatabase('pg_test');
    try {
      const stores = await Promise.all([open(fresh.url), open(fresh.url), open(fresh.url)]);
      await Promise.all(stores.map((s) => s.close()));
      const c = new pg.Client({ connectionString: fresh.url });
      await c.connect();
      const applied = (await c.query('SELECT id FROM schema_migrations ORDER BY id')).rows.map((r) => r.id);
      await c.end();
      // Ids sort in the order the steps apply (test/control/store/renamed-migrations.test.ts).
      expect(applied).toEqual(migrations.map((m) => m.id));
      // Opening again applies nothing and works.
      await (await open(fresh.url)).close();
    } finally {
      await fresh.drop();
    }
  });

  const changed = (change: (u: URL) => void) => {
    const u = new URL(db.url);
    change(u);
    return u.toString();
  };

  it.each([
    ['an unreachable server', (u: URL) => void (u.port = '1'), /ECONNREFUSED/],
    ['a missing database', (u: URL) => void (u.pathname = '/pg_test_missing_database'), /database "pg_test_missing_database" does not exist/],
    ['an unknown user', (u: URL) => void (u.username = 'no_such_user'), /role "no_such_user" does not exist|authentication failed/],
  ])('%s: one line naming the database and the reason, password hidden', async (_what, change, reason) => {
    const err = (await open(
      changed((u) => {
        u.password = 'hunter2';
        change(u);
      }),
    ).catch((e: Error) => e)) as Error;
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toMatch(/^cannot open the PostgreSQL database postgres:\/\/.*:\*\*\*@/);
    expect(err.message).toMatch(reason);
    expect(err.message).not.toContain('hunter2');
    expect(err.message.split('\n')).toHaveLength(1);
  });
});

describe('postgres: a newer node migrated the schema', () => {
  it('statements this node prepared before a column was added still work (its connections are renewed)', async () => {
    const fresh = await createTestDatabase('pg_test');
    try {
      const store = await open(fresh.url);
      await store.projects.create({ id: 'prj_old', slug: 'old', name: 'Old', plan: 'free', createdAt: 1 }, []);
      // Every pooled connection prepares the read.
      await Promise.all(Array.from({ length: 20 }, () => store.projects.list()));
      const c = new pg.Client({ connectionString: fresh.url });
      await c.connect();
      await c.query('ALTER TABLE projects ADD COLUMN added_by_a_newer_node TEXT');
      await c.end();
      const lists = await Promise.all(Array.from({ length: 20 }, () => store.projects.list()));
      expect(lists.map((l) => l.map((x) => x.slug))).toEqual(Array(20).fill(['old']));
      await store.close();
    } finally {
      await fresh.drop();
    }
  });
});

describe('postgres: a lost connection', () => {
  it('store calls fail as unavailable while the server is cut off, and work again once it is back', async () => {
    const server = new URL(db.url);
    const proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
    const store = await open(url(db.url, proxy.port));
    try {
      await store.projects.create({ id: 'prj_lost', slug: 'lost', name: 'Lost', plan: 'free', createdAt: Date.now() }, []);
      proxy.cut();
      const t0 = Date.now();
      const err = await store.projects.byId('prj_lost').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect(err).toMatchObject({ code: 'STORE_UNAVAILABLE', status: 503, headers: { 'Retry-After': expect.any(String) } });
      expect(Date.now() - t0).toBeLessThan(6000);
      // An email refused while the server is away is refused, never half recorded.
      const accept = await store.emails
        .accept({
          id: '0190f000-0000-7000-8000-000000000001',
          projectId: 'prj_lost',
          status: 'queued',
          from: 'a@acme.test',
          subject: 's',
          bulk: false,
          request: '{}',
          createdAt: Date.now(),
          recipients: [{ address: 'r@inbox.test', kind: 'to' }],
        })
        .catch((e: unknown) => e);
      expect(accept).toBeInstanceOf(StoreUnavailableError);
      proxy.restore();
      expect((await store.projects.byId('prj_lost'))?.slug).toBe('lost');
      expect(await store.emails.get('prj_lost', '0190f000-0000-7000-8000-000000000001')).toBeUndefined();
    } finally {
      proxy.restore();
      await store.close();
      await proxy.close();
    }
  });
});

/** The same database through another port (the proxy's). */
function url(databaseUrl: string, port: number): string {
  const u = new URL(databaseUrl);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}

// `pg` stays inside the backend: no other source file may import it.
describe('postgres: the driver stays in its folder', () => {
  it('only control/store/postgres/ imports pg', () => {
    const root = path.resolve(import.meta.dirname, '../../..');
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
        const rel = path.posix.join(dir, e.name);
        if (e.isDirectory()) {
          if (!['node_modules', 'gen', 'dist'].includes(e.name)) walk(rel);
        } else if (
          /\.(ts|js|cjs|mjs)$/.test(e.name) &&
          /from\s+['"]pg['"]|import\(\s*['"]pg['"]\s*\)|require\(\s*['"]pg['"]\s*\)/.test(fs.readFileSync(path.join(root, rel), 'utf8'))
        )
          offenders.push(rel);
      }
    };
    for (const d of ['core', 'common', 'control', 'gateway', 'plugins', 'auth', 'proto', 'bin']) walk(d);
    expect(offenders.filter((f) => !f.startsWith('control/store/postgres/'))).toEqual([]);
  });
});
