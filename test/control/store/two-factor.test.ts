// The two-factor store (control/store/{sqlite,postgres}/two-factor.ts) on BOTH backends: a TOTP secret
// confirmed once, each step used once and never an earlier one (two racers with one code: one wins),
// backup codes single use and replaced as a set, pending sign-ins bound to their project and environment
// with counted tries, taken once, pruned; everything goes with its user (ON DELETE CASCADE).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Env, Store } from '../../../control/store/index.js';
import { openStore } from '../../../control/store/open.js';
import { controlDbFile } from '../../../core/data-files.js';
import { localInvalidator } from '../../../core/invalidation.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/cluster.js';

const storage = { synchronous: 'NORMAL' as const, maxBatch: 100 };

interface Backend {
  store: Store;
  /** Deletes a user row as user management will (its sessions and identities first). */
  deleteUser(id: string): Promise<void>;
  close(): Promise<void>;
}

const USER_DEPENDENTS = [
  'DELETE FROM auth_sessions WHERE user_id = $1',
  'DELETE FROM auth_identities WHERE user_id = $1',
  'DELETE FROM auth_users WHERE id = $1',
];

const backends: Record<string, () => Promise<Backend>> = {
  sqlite: async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-2fa-'));
    const store = await openStore({ dataDir: dir, storage }, localInvalidator());
    return {
      store,
      async deleteUser(id) {
        const db = new Database(controlDbFile(dir));
        db.pragma('foreign_keys = ON');
        db.pragma('busy_timeout = 5000');
        for (const sql of USER_DEPENDENTS) db.prepare(sql.replace('$1', '?')).run(id);
        db.close();
      },
      async close() {
        await store.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  },
  postgres: async () => {
    const db: TestDatabase = await createTestDatabase('pg_2fa');
    const store = await openStore({ dataDir: '', storage, databaseUrl: db.url }, localInvalidator());
    return {
      store,
      async deleteUser(id) {
        const c = new pg.Client({ connectionString: db.url });
        await c.connect();
        for (const sql of USER_DEPENDENTS) await c.query(sql, [id]);
        await c.end();
      },
      async close() {
        await store.close();
        await db.drop();
      },
    };
  },
};

describe.each(Object.keys(backends))('two-factor store on %s', (name) => {
  let b: Backend;
  let seq = 0;
  const env: Env = 'live';
  beforeAll(async () => {
    b = await backends[name]!();
    await b.store.projects.create({ id: 'prj_a', slug: 'a', name: 'A', plan: 'free', createdAt: Date.now() }, []);
    await b.store.projects.create({ id: 'prj_b', slug: 'b', name: 'B', plan: 'free', createdAt: Date.now() }, []);
  });
  afterAll(async () => {
    await b?.close();
  });

  const newUser = async (projectId = 'prj_a'): Promise<string> => {
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
    const at = Date.now();
    const r = await b.store.signIn.signIn(projectId, env, profile, { ip: null, userAgent: null }, at, {
      session: { id: crypto.randomUUID(), tokenHash: `h${n}-${Math.random()}`, createdAt: at, expiresAt: at + 60_000 },
    });
    return r.user.id;
  };
  const pending = (userId: string, ticketHash: string, expiresAt = Date.now() + 300_000, projectId = 'prj_a') => ({
    ticketHash,
    projectId,
    env,
    userId,
    provider: 'email',
    ip: '203.0.113.1',
    userAgent: 'UA',
    sessionTtlMs: 3_600_000,
    enrol: false,
    expiresAt,
  });

  it('a secret waits unconfirmed, may be replaced until confirmed, and is confirmed once with its backup codes', async () => {
    const tf = b.store.twoFactor;
    const u = await newUser();
    expect(await tf.totp(u)).toBeUndefined();
    expect(await tf.startTotp(u, 'enc-1', 1000)).toBe(true);
    expect(await tf.startTotp(u, 'enc-2', 2000)).toBe(true);
    expect(await tf.totp(u)).toEqual({ userId: u, secret: 'enc-2', createdAt: 2000, confirmedAt: null, lastStep: null });
    // Steps are not usable before confirmation.
    expect(await tf.useTotpStep(u, 5)).toBe(false);
    // The replaced secret cannot be confirmed.
    expect(await tf.confirmTotp(u, 'enc-1', 10, 3000, ['x'])).toBe(false);
    const [one, two] = await Promise.all([tf.confirmTotp(u, 'enc-2', 10, 3000, ['a', 'b', 'c']), tf.confirmTotp(u, 'enc-2', 10, 3000, ['d'])]);
    expect([one, two].sort()).toEqual([false, true]);
    expect(await tf.totp(u)).toMatchObject({ secret: 'enc-2', confirmedAt: 3000, lastStep: 10 });
    expect(await tf.backupCodesLeft(u)).toBe(one ? 3 : 1);
    // A confirmed secret is not replaced by a new setup.
    expect(await tf.startTotp(u, 'enc-3', 4000)).toBe(false);
    expect((await tf.totp(u))?.secret).toBe('enc-2');
  });

  it('each step once, never an earlier one; two racers with the same step: one wins', async () => {
    const tf = b.store.twoFactor;
    const u = await newUser();
    await tf.startTotp(u, 's', 1);
    await tf.confirmTotp(u, 's', 100, 1, []);
    expect(await tf.useTotpStep(u, 100)).toBe(false);
    expect(await tf.useTotpStep(u, 99)).toBe(false);
    const race = await Promise.all([tf.useTotpStep(u, 101), tf.useTotpStep(u, 101), tf.useTotpStep(u, 101)]);
    expect(race.filter(Boolean)).toHaveLength(1);
    expect(await tf.useTotpStep(u, 100)).toBe(false);
    expect(await tf.useTotpStep(u, 102)).toBe(true);
    expect((await tf.totp(u))?.lastStep).toBe(102);
  });

  it('backup codes: single use (racers: one wins), replaced as a set, removed with the secret', async () => {
    const tf = b.store.twoFactor;
    const u = await newUser();
    const other = await newUser();
    await tf.startTotp(u, 's', 1);
    await tf.confirmTotp(u, 's', 1, 1, ['h1', 'h2', 'h3']);
    // Another user's hash is not theirs.
    expect(await tf.useBackupCode(other, 'h1', 5)).toBe(false);
    const race = await Promise.all([tf.useBackupCode(u, 'h1', 5), tf.useBackupCode(u, 'h1', 5)]);
    expect(race.filter(Boolean)).toHaveLength(1);
    expect(await tf.useBackupCode(u, 'h1', 6)).toBe(false);
    expect(await tf.backupCodesLeft(u)).toBe(2);
    await tf.replaceBackupCodes(u, ['n1', 'n2'], 7);
    expect(await tf.useBackupCode(u, 'h2', 8)).toBe(false);
    expect(await tf.backupCodesLeft(u)).toBe(2);
    expect(await tf.removeTotp(u)).toBe(true);
    expect(await tf.removeTotp(u)).toBe(false);
    expect(await tf.totp(u)).toBeUndefined();
    expect(await tf.backupCodesLeft(u)).toBe(0);
    expect(await tf.useBackupCode(u, 'n1', 9)).toBe(false);
  });

  it('a pending sign-in: read only by its project and environment, tries counted up to the limit, taken once', async () => {
    const tf = b.store.twoFactor;
    const u = await newUser();
    const now = Date.now();
    await tf.putPending(pending(u, 'tk1'));
    expect(await tf.pending('tk1', 'prj_a', env, now)).toMatchObject({
      status: 'ok',
      pending: { userId: u, attempts: 0, enrol: false, sessionTtlMs: 3_600_000, ip: '203.0.113.1' },
    });
    expect(await tf.pending('tk1', 'prj_b', env, now)).toEqual({ status: 'missing' });
    expect(await tf.pending('tk1', 'prj_a', 'test', now)).toEqual({ status: 'missing' });
    expect(await tf.attemptPending('tk1', 'prj_b', env, now, 5)).toEqual({ status: 'missing' });
    // Six racing tries against a limit of 5: exactly five are let through.
    const tries = await Promise.all(Array.from({ length: 6 }, () => tf.attemptPending('tk1', 'prj_a', env, now, 5)));
    expect(tries.filter((t) => t.status === 'ok')).toHaveLength(5);
    expect(tries.filter((t) => t.status === 'locked')).toHaveLength(1);
    expect(tries.flatMap((t) => (t.status === 'ok' ? [t.pending.attempts] : [])).sort()).toEqual([1, 2, 3, 4, 5]);
    expect(await tf.attemptPending('tk1', 'prj_a', env, now, 5)).toEqual({ status: 'locked' });

    await tf.putPending({ ...pending(u, 'tk2'), enrol: true });
    expect(await tf.pending('tk2', 'prj_a', env, now)).toMatchObject({ status: 'ok', pending: { enrol: true } });
    const takes = await Promise.all([tf.takePending('tk2'), tf.takePending('tk2')]);
    expect(takes.filter(Boolean)).toHaveLength(1);
    expect(await tf.pending('tk2', 'prj_a', env, now)).toEqual({ status: 'missing' });
  });

  it('an expired ticket answers expired, then is pruned', async () => {
    const tf = b.store.twoFactor;
    const u = await newUser();
    const now = Date.now();
    await tf.putPending(pending(u, 'old', now - 1));
    await tf.putPending(pending(u, 'live', now + 60_000));
    expect(await tf.attemptPending('old', 'prj_a', env, now, 5)).toEqual({ status: 'expired' });
    expect(await tf.pending('old', 'prj_a', env, now)).toEqual({ status: 'expired' });
    await tf.prune(now);
    expect(await tf.pending('old', 'prj_a', env, now)).toEqual({ status: 'missing' });
    expect((await tf.pending('live', 'prj_a', env, now)).status).toBe('ok');
  });

  it("a deleted user's secret, backup codes and pending sign-ins go with it", async () => {
    const tf = b.store.twoFactor;
    const u = await newUser();
    const keep = await newUser('prj_b');
    for (const id of [u, keep]) {
      await tf.startTotp(id, 's', 1);
      await tf.confirmTotp(id, 's', 1, 1, ['c1', 'c2']);
    }
    await tf.putPending(pending(u, 'gone'));
    await tf.putPending(pending(keep, 'kept', Date.now() + 60_000, 'prj_b'));
    await b.deleteUser(u);
    expect(await tf.totp(u)).toBeUndefined();
    expect(await tf.backupCodesLeft(u)).toBe(0);
    expect(await tf.pending('gone', 'prj_a', env, Date.now())).toEqual({ status: 'missing' });
    expect(await tf.totp(keep)).toMatchObject({ confirmedAt: 1 });
    expect(await tf.backupCodesLeft(keep)).toBe(2);
    expect((await tf.pending('kept', 'prj_b', env, Date.now())).status).toBe('ok');
  });
});
