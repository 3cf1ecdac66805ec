// Magic links in the store, on both backends: a link is spent once, whatever the number of racers
// (one process, and two PostgreSQL nodes on one database); expired and unknown links are told apart;
// the cooldown's last send, the test environment's token and pruning.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewMagicLink, Store } from '../../../control/store/index.js';
import { openStore } from '../../../control/store/open.js';
import { localInvalidator } from '../../../core/invalidation.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/cluster.js';

const storage = { synchronous: 'NORMAL' as const, maxBatch: 100 };
const NOW = 1_800_000_000_000;
let seq = 0;

function link(over: Partial<NewMagicLink> = {}): NewMagicLink {
  return {
    tokenHash: crypto.randomBytes(32).toString('hex'),
    projectId: 'prj_a',
    env: 'live',
    email: `u${++seq}@example.com`,
    callbackUrl: 'https://app.example.com/cb',
    clientChallenge: 'c'.repeat(43),
    createdAt: NOW,
    expiresAt: NOW + 600_000,
    testToken: null,
    ...over,
  };
}

interface Backend {
  name: string;
  open(): Promise<{ a: Store; b: Store; close(): Promise<void> }>;
}

const backends: Backend[] = [
  {
    name: 'sqlite',
    async open() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-magic-'));
      const a = await openStore({ dataDir: dir, storage }, localInvalidator());
      return {
        a,
        b: a,
        async close() {
          await a.close();
          fs.rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: 'postgres',
    async open() {
      const db: TestDatabase = await createTestDatabase('pg_magic');
      // Two stores on one database: two nodes of a cluster.
      const a = await openStore({ dataDir: '', storage, databaseUrl: db.url }, localInvalidator());
      const b = await openStore({ dataDir: '', storage, databaseUrl: db.url }, localInvalidator());
      return {
        a,
        b,
        async close() {
          await a.close();
          await b.close();
          await db.drop();
        },
      };
    },
  },
];

for (const backend of backends) {
  describe(`magic links (${backend.name})`, () => {
    let s: Awaited<ReturnType<Backend['open']>>;
    beforeAll(async () => {
      s = await backend.open();
    }, 30_000);
    afterAll(async () => {
      await s?.close();
    });

    it('keeps what was sent and spends it once; peeking spends nothing', async () => {
      const l = link();
      await s.a.magicLinks.put(l);
      const peeked = await s.a.magicLinks.peek(l.tokenHash);
      expect(peeked).toEqual({
        projectId: 'prj_a',
        env: 'live',
        email: l.email,
        callbackUrl: l.callbackUrl,
        clientChallenge: l.clientChallenge,
        createdAt: NOW,
        expiresAt: NOW + 600_000,
        usedAt: null,
      });
      expect(await s.a.magicLinks.peek(l.tokenHash)).toEqual(peeked);
      const first = await s.a.magicLinks.take(l.tokenHash, NOW + 1000);
      expect(first).toEqual({ status: 'ok', link: { ...peeked, usedAt: NOW + 1000 } });
      expect(await s.a.magicLinks.take(l.tokenHash, NOW + 2000)).toEqual({ status: 'used' });
      expect((await s.a.magicLinks.peek(l.tokenHash))?.usedAt).toBe(NOW + 1000);
    });

    it('gives a link to exactly one of many racers, on one node and across two', async () => {
      for (let round = 0; round < 5; round++) {
        const l = link();
        await s.a.magicLinks.put(l);
        const takes = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? s.b : s.a).magicLinks.take(l.tokenHash, NOW + 1)));
        expect(takes.filter((t) => t.status === 'ok')).toHaveLength(1);
        expect(takes.filter((t) => t.status === 'used')).toHaveLength(11);
      }
    });

    it('refuses an expired link (and does not mark it used) and tells an unknown one apart', async () => {
      const l = link();
      await s.a.magicLinks.put(l);
      expect(await s.a.magicLinks.take(l.tokenHash, l.expiresAt)).toEqual({ status: 'expired' });
      expect(await s.a.magicLinks.take(l.tokenHash, l.expiresAt + 1)).toEqual({ status: 'expired' });
      expect((await s.a.magicLinks.peek(l.tokenHash))?.usedAt).toBeNull();
      expect(await s.a.magicLinks.take('0'.repeat(64), NOW)).toEqual({ status: 'unknown' });
      expect(await s.a.magicLinks.peek('0'.repeat(64))).toBeUndefined();
    });

    it('answers the last send to an address per project and environment', async () => {
      const email = 'cool@example.com';
      expect(await s.a.magicLinks.lastSentAt('prj_a', 'live', email)).toBeUndefined();
      await s.a.magicLinks.put(link({ email, createdAt: NOW }));
      await s.a.magicLinks.put(link({ email, createdAt: NOW + 5000 }));
      await s.a.magicLinks.put(link({ email, createdAt: NOW + 9000, env: 'test' }));
      await s.a.magicLinks.put(link({ email, createdAt: NOW + 9000, projectId: 'prj_b' }));
      expect(await s.b.magicLinks.lastSentAt('prj_a', 'live', email)).toBe(NOW + 5000);
    });

    it("reads a test link's token only in the test environment, only while it is usable", async () => {
      const email = 'tester@example.com';
      const old = link({ email, env: 'test', testToken: 'sealed-old', createdAt: NOW });
      const fresh = link({ email, env: 'test', testToken: 'sealed-new', createdAt: NOW + 1 });
      await s.a.magicLinks.put(old);
      await s.a.magicLinks.put(fresh);
      await s.a.magicLinks.put(link({ email, env: 'live', testToken: 'never', createdAt: NOW + 2 }));
      expect(await s.a.magicLinks.testToken('prj_a', email, NOW)).toEqual({ testToken: 'sealed-new', expiresAt: fresh.expiresAt });
      await s.a.magicLinks.take(fresh.tokenHash, NOW + 10);
      expect(await s.a.magicLinks.testToken('prj_a', email, NOW)).toEqual({ testToken: 'sealed-old', expiresAt: old.expiresAt });
      expect(await s.a.magicLinks.testToken('prj_a', email, old.expiresAt)).toBeUndefined();
      expect(await s.a.magicLinks.testToken('prj_b', email, NOW)).toBeUndefined();
    });

    it('prunes expired links only', async () => {
      const gone = link({ expiresAt: NOW + 10 });
      const kept = link({ expiresAt: NOW + 10_000_000 });
      await s.a.magicLinks.put(gone);
      await s.a.magicLinks.put(kept);
      expect(await s.a.magicLinks.prune(NOW + 20)).toBeGreaterThanOrEqual(1);
      expect(await s.a.magicLinks.peek(gone.tokenHash)).toBeUndefined();
      expect(await s.a.magicLinks.peek(kept.tokenHash)).toBeDefined();
    });
  });
}
