// The passkeys store (auth/passkeys) on both backends: credentials unique per project and environment,
// a user's list and removal scoped to that user, challenges taken once (racers included, two PostgreSQL
// nodes), counters that only grow (a clone's replayed count refused), exchange codes only for the project's
// own users, and a user's passkeys gone with the user.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Env, PasskeyRow, Store } from '../../../control/store/index.js';
import { openStore } from '../../../control/store/open.js';
import { controlDbFile } from '../../../core/data-files.js';
import { localInvalidator } from '../../../core/invalidation.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/cluster.js';

interface Backend {
  open(): Promise<Store>;
  /** Deletes a user (with its identities) the way user management will: passkeys must follow by cascade. */
  deleteUser(userId: string): Promise<void>;
  close(): Promise<void>;
}

async function sqliteBackend(): Promise<Backend> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-passkeys-'));
  return {
    open: () => openStore({ dataDir: dir, storage: { synchronous: 'NORMAL', maxBatch: 100 } }, localInvalidator()),
    async deleteUser(userId) {
      const db = new Database(controlDbFile(dir));
      db.pragma('foreign_keys = ON');
      for (const t of ['auth_sessions', 'auth_exchange_codes', 'auth_identities']) db.prepare(`DELETE FROM ${t} WHERE user_id = ?`).run(userId);
      db.prepare('DELETE FROM auth_users WHERE id = ?').run(userId);
      db.close();
    },
    async close() {
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgresBackend(): Promise<Backend> {
  const db: TestDatabase = await createTestDatabase('pg_passkeys');
  return {
    open: () => openStore({ dataDir: '', storage: { synchronous: 'FULL', maxBatch: 100 }, databaseUrl: db.url }, localInvalidator()),
    async deleteUser(userId) {
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      for (const t of ['auth_sessions', 'auth_exchange_codes', 'auth_identities']) await c.query(`DELETE FROM ${t} WHERE user_id = $1`, [userId]);
      await c.query('DELETE FROM auth_users WHERE id = $1', [userId]);
      await c.end();
    },
    close: () => db.drop(),
  };
}

const origin = { ip: '203.0.113.9', userAgent: 'test' };
let seq = 0;

function cases(name: string, make: () => Promise<Backend>) {
  describe(`passkeys store: ${name}`, () => {
    let backend: Backend;
    let store: Store;
    let projectA: string;
    let projectB: string;
    const opened: Store[] = [];

    beforeAll(async () => {
      backend = await make();
      store = await backend.open();
      opened.push(store);
      const now = Date.now();
      projectA = (await store.projects.create({ id: `prj_a_${name}`, slug: `a-${name}`, name: 'A', plan: 'free', createdAt: now }, [])).id;
      projectB = (await store.projects.create({ id: `prj_b_${name}`, slug: `b-${name}`, name: 'B', plan: 'free', createdAt: now }, [])).id;
    });
    afterAll(async () => {
      await Promise.all(opened.map((s) => s.close()));
      await backend?.close();
    });

    const user = async (projectId: string, env: Env = 'live') => {
      const n = ++seq;
      const profile = {
        provider: 'email',
        subject: `u${n}@x.test`,
        email: `u${n}@x.test`,
        emailVerified: true,
        name: null,
        avatarUrl: null,
        phone: null,
        username: null,
      };
      const now = Date.now();
      const r = await store.signIn.signIn(projectId, env, profile, origin, now, {
        session: { id: crypto.randomUUID(), tokenHash: crypto.randomBytes(32).toString('hex'), createdAt: now, expiresAt: now + 60_000 },
      });
      return r.user.id;
    };

    const passkey = (projectId: string, userId: string, over: Partial<PasskeyRow> = {}): PasskeyRow => ({
      id: crypto.randomUUID(),
      projectId,
      env: 'live',
      userId,
      credentialId: crypto.randomBytes(16).toString('base64url'),
      publicKey: new Uint8Array(crypto.randomBytes(77)),
      counter: 0,
      transports: ['internal', 'hybrid'],
      deviceType: 'multiDevice',
      backedUp: true,
      backupEligible: true,
      aaguid: '00000000-0000-0000-0000-000000000000',
      name: 'Laptop',
      rpId: 'localhost',
      createdAt: Date.now(),
      lastUsedAt: null,
      ...over,
    });

    it('keeps a credential with every field; its id is unique per project and environment only', async () => {
      const u = await user(projectA);
      const k = passkey(projectA, u, { counter: 5 });
      expect(await store.passkeys.add(k)).toBe(true);
      expect(await store.passkeys.byCredentialId(projectA, 'live', k.credentialId)).toEqual(k);
      // The same credential id again in the project: refused, the first row kept.
      expect(await store.passkeys.add({ ...k, id: crypto.randomUUID(), name: 'Other' })).toBe(false);
      expect((await store.passkeys.byCredentialId(projectA, 'live', k.credentialId))?.name).toBe('Laptop');
      // Another project (or environment) does not see it, and may hold its own row of that id.
      expect(await store.passkeys.byCredentialId(projectB, 'live', k.credentialId)).toBeUndefined();
      expect(await store.passkeys.byCredentialId(projectA, 'test', k.credentialId)).toBeUndefined();
      const ub = await user(projectB);
      expect(await store.passkeys.add(passkey(projectB, ub, { credentialId: k.credentialId }))).toBe(true);
    });

    it("lists a user's passkeys oldest first; removal only by their own user, project and environment", async () => {
      const u = await user(projectA);
      const other = await user(projectA);
      const first = passkey(projectA, u, { createdAt: 1000, name: 'One' });
      const second = passkey(projectA, u, { createdAt: 2000, name: 'Two' });
      await store.passkeys.add(second);
      await store.passkeys.add(first);
      await store.passkeys.add(passkey(projectA, other));
      expect((await store.passkeys.listForUser(projectA, 'live', u)).map((k) => k.name)).toEqual(['One', 'Two']);
      expect(await store.passkeys.remove(projectA, 'live', other, first.id)).toBeUndefined();
      expect(await store.passkeys.remove(projectB, 'live', u, first.id)).toBeUndefined();
      expect(await store.passkeys.remove(projectA, 'test', u, first.id)).toBeUndefined();
      expect((await store.passkeys.remove(projectA, 'live', u, first.id))?.id).toBe(first.id);
      expect(await store.passkeys.remove(projectA, 'live', u, first.id)).toBeUndefined();
      expect((await store.passkeys.listForUser(projectA, 'live', u)).map((k) => k.name)).toEqual(['Two']);
    });

    it('moves a counter forward only: equal or lower is refused (a clone), 0 stays usable for authenticators without one', async () => {
      const u = await user(projectA);
      const k = passkey(projectA, u);
      await store.passkeys.add(k);
      expect(await store.passkeys.use(k.id, 0, true, 10)).toBe(true);
      expect(await store.passkeys.use(k.id, 3, false, 20)).toBe(true);
      expect(await store.passkeys.use(k.id, 3, false, 30)).toBe(false);
      expect(await store.passkeys.use(k.id, 2, false, 30)).toBe(false);
      expect(await store.passkeys.use(k.id, 0, false, 30)).toBe(false);
      const row = await store.passkeys.byCredentialId(projectA, 'live', k.credentialId);
      expect(row).toMatchObject({ counter: 3, backedUp: false, lastUsedAt: 20 });
      // Of racers with the same next count, one wins.
      const r = await Promise.all([store.passkeys.use(k.id, 4, false, 40), store.passkeys.use(k.id, 4, false, 40), store.passkeys.use(k.id, 4, false, 40)]);
      expect(r.filter(Boolean)).toHaveLength(1);
    });

    it('takes a challenge once, expired ones included (the caller refuses them); prune drops the expired', async () => {
      const hash = crypto.randomBytes(32).toString('hex');
      const c = {
        challengeHash: hash,
        projectId: projectA,
        env: 'live' as const,
        userId: null,
        purpose: 'authenticate' as const,
        rpId: 'localhost',
        origin: 'http://localhost:3000',
        expiresAt: Date.now() + 300_000,
      };
      await store.passkeys.putChallenge(c);
      const taken = await Promise.all([store.passkeys.takeChallenge(hash), store.passkeys.takeChallenge(hash), store.passkeys.takeChallenge(hash)]);
      expect(taken.filter(Boolean)).toEqual([c]);
      const old = { ...c, challengeHash: crypto.randomBytes(32).toString('hex'), expiresAt: 1000 };
      await store.passkeys.putChallenge(old);
      const live = { ...c, challengeHash: crypto.randomBytes(32).toString('hex'), purpose: 'register' as const, userId: await user(projectA) };
      await store.passkeys.putChallenge(live);
      await store.passkeys.prune(Date.now());
      expect(await store.passkeys.takeChallenge(old.challengeHash)).toBeUndefined();
      expect(await store.passkeys.takeChallenge(live.challengeHash)).toEqual(live);
    });

    it("writes an exchange code only for the project's and environment's own user; it opens a passkey session once", async () => {
      const u = await user(projectA);
      const x = (codeHash: string, secondFactor = true) => ({ codeHash, expiresAt: Date.now() + 60_000, clientChallenge: null, secondFactor });
      expect(await store.passkeys.insertExchange(x('h-b'), projectB, 'live', u, 'passkey', origin)).toBe(false);
      expect(await store.passkeys.insertExchange(x('h-t'), projectA, 'test', u, 'passkey', origin)).toBe(false);
      expect(await store.passkeys.insertExchange(x(`h-a-${name}`), projectA, 'live', u, 'passkey', origin)).toBe(true);
      expect(await store.passkeys.insertExchange(x(`h-p-${name}`, false), projectA, 'live', u, 'passkey', origin)).toBe(true);
      const now = Date.now();
      const session = () => ({ id: crypto.randomUUID(), tokenHash: crypto.randomBytes(32).toString('hex'), createdAt: now, expiresAt: now + 60_000 });
      const r = await store.signIn.useExchangeCode(`h-a-${name}`, projectA, 'live', session(), () => true);
      expect(r.status).toBe('ok');
      // A user-verified passkey's code carries its second factor to the exchange; one without verification does not.
      if (r.status === 'ok') expect(r).toMatchObject({ session: { userId: u, provider: 'passkey', ip: origin.ip }, secondFactor: true });
      expect(await store.signIn.useExchangeCode(`h-p-${name}`, projectA, 'live', session(), () => true)).toMatchObject({ status: 'ok', secondFactor: false });
    });

    it('a user deleted takes its passkeys with it (ON DELETE CASCADE)', async () => {
      const u = await user(projectA);
      const k = passkey(projectA, u);
      await store.passkeys.add(k);
      await store.close();
      opened.splice(opened.indexOf(store), 1);
      await backend.deleteUser(u);
      store = await backend.open();
      opened.push(store);
      expect(await store.signIn.userById(u)).toBeUndefined();
      expect(await store.passkeys.byCredentialId(projectA, 'live', k.credentialId)).toBeUndefined();
    });
  });
}

cases('sqlite', sqliteBackend);
cases('postgres', postgresBackend);
