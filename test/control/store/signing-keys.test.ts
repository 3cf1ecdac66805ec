// The JWT signing keys' store on both backends: one first key however many nodes race to make it, rotation
// states (the new key published first, the old one retired at its start and dropped after the overlap), an
// automatic rotation done once by racers, pruning.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigningKeyRow, Store } from '../../../control/store/index.js';
import { openStore } from '../../../control/store/open.js';
import { localInvalidator } from '../../../core/invalidation.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/cluster.js';

const storage = { synchronous: 'NORMAL' as const, maxBatch: 100 };
const key = (kid: string, createdAt: number, activeFrom = createdAt): SigningKeyRow => ({
  kid,
  alg: 'ES256',
  publicJwk: `{"kid":"${kid}"}`,
  privateJwk: `v1.sealed-${kid}`,
  createdAt,
  activeFrom,
  retiredAt: null,
  dropAfter: null,
});

interface Backend {
  /** Two stores on one database (two nodes; on SQLite, one store twice: one process owns the file). */
  open(): Promise<[Store, Store]>;
  close(): Promise<void>;
}

const sqlite = (): Backend => {
  let dir = '';
  let store: Store | undefined;
  return {
    async open() {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-keys-'));
      store = await openStore({ dataDir: dir, storage }, localInvalidator());
      return [store, store];
    },
    async close() {
      await store?.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
};

const postgres = (): Backend => {
  let db: TestDatabase | undefined;
  let stores: Store[] = [];
  return {
    async open() {
      db = await createTestDatabase('pg_keys');
      const open = () => openStore({ dataDir: '', storage, databaseUrl: db!.url }, localInvalidator());
      stores = await Promise.all([open(), open()]);
      return [stores[0]!, stores[1]!];
    },
    async close() {
      await Promise.all(stores.map((s) => s.close()));
      await db?.drop();
    },
  };
};

describe.each([
  ['sqlite', sqlite],
  ['postgres', postgres],
])('signing keys (%s)', (_name, backend) => {
  const b = backend();
  let a: Store;
  let other: Store;
  beforeAll(async () => {
    [a, other] = await b.open();
  });
  afterAll(() => b.close());

  it('nodes racing to make the first key: exactly one wins, and later calls add none', async () => {
    const won = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? other : a).signingKeys.createFirst(key(`first-${i}`, 1000))));
    expect(won.filter(Boolean)).toHaveLength(1);
    const rows = await a.signingKeys.list();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ alg: 'ES256', createdAt: 1000, activeFrom: 1000, retiredAt: null, dropAfter: null });
    expect(rows[0]!.privateJwk).toMatch(/^v1\.sealed-/);
    expect(await other.signingKeys.createFirst(key('late', 2000))).toBe(false);
    expect(await other.signingKeys.list()).toEqual(rows);
  });

  it('rotation adds the next key and retires the signing one at its start, dropped after the overlap', async () => {
    const [first] = await a.signingKeys.list();
    expect(await other.signingKeys.rotate(key('second', 5000, 65_000), 10_000)).toBe(true);
    const rows = await a.signingKeys.list();
    expect(rows.map((r) => r.kid)).toEqual([first!.kid, 'second']);
    expect(rows[0]).toMatchObject({ retiredAt: 65_000, dropAfter: 75_000 });
    expect(rows[1]).toMatchObject({ activeFrom: 65_000, retiredAt: null, dropAfter: null });
    // Another rotation at once, before "second" signed: both stop at its start; the first keeps no later end.
    expect(await a.signingKeys.rotate(key('third', 6000, 6000), 10_000)).toBe(true);
    const after = await other.signingKeys.list();
    expect(after.map((r) => [r.kid, r.retiredAt, r.dropAfter])).toEqual([
      [first!.kid, 6000, 16_000],
      ['second', 6000, 16_000],
      ['third', null, null],
    ]);
  });

  it('an automatic rotation raced by nodes happens once; a recent key is not rotated', async () => {
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => (i % 2 ? other : a).signingKeys.rotate(key(`auto-${i}`, 100_000, 100_000), 10_000, 50_000)),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await a.signingKeys.rotate(key('too-soon', 100_500, 100_500), 10_000, 50_000)).toBe(false);
    expect((await a.signingKeys.list()).filter((r) => r.kid.startsWith('auto-') || r.kid === 'too-soon')).toHaveLength(1);
  });

  it('prune deletes only the keys past their drop time', async () => {
    expect(await a.signingKeys.prune(15_999)).toBe(0);
    expect(await other.signingKeys.prune(16_000)).toBe(2);
    const rows = await a.signingKeys.list();
    expect(rows.map((r) => r.kid)).not.toContain('second');
    expect(rows.filter((r) => r.retiredAt === null)).toHaveLength(1);
  });
});
