// User management's store (control/store/{sqlite,postgres}/users.ts) on both backends: listing newest first
// in keyset pages, searches (address exact and prefix with LIKE wildcards taken literally, number, provider
// identity, created and last sign-in ranges), a user with its identities and live sessions, updates, bans,
// and deletion that removes the personal data in one transaction; another project's or environment's user
// id never matches anything.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Env, Project, SignInProfile, Store } from '../../../control/store/index.js';
import { openStore } from '../../../control/store/open.js';
import { localInvalidator } from '../../../core/invalidation.js';
import { controlDbFile } from '../../../core/data-files.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/cluster.js';

const storage = { synchronous: 'NORMAL' as const, maxBatch: 100 };
const T0 = 1_800_000_000_000;
const HOUR = 3_600_000;
const origin = { ip: '203.0.113.9', userAgent: 'store-test' };

interface Backend {
  open(): Promise<Store>;
  /** A raw read of the database (what no store method answers: scrubbed audit rows, deleted codes). */
  rows(sql: string, params: unknown[]): Promise<any[]>;
  close(): Promise<void>;
}

const profile = (p: Partial<SignInProfile> & { subject: string }): SignInProfile => ({
  provider: 'email',
  email: null,
  emailVerified: false,
  name: null,
  avatarUrl: null,
  phone: null,
  username: null,
  ...p,
});

function suite(name: string, backend: () => Promise<Backend>) {
  describe(`${name}: user management`, () => {
    let b: Backend;
    let store: Store;
    let a: Project;
    let other: Project;
    let n = 0;

    beforeAll(async () => {
      b = await backend();
    });
    afterAll(async () => {
      await b?.close();
    });
    beforeEach(async () => {
      store = await b.open();
      const slug = `u${++n}${crypto.randomBytes(3).toString('hex')}`;
      a = await store.projects.create({ id: `prj_${slug}a`, slug: `${slug}a`, name: 'A', plan: 'free', createdAt: T0 }, []);
      other = await store.projects.create({ id: `prj_${slug}b`, slug: `${slug}b`, name: 'B', plan: 'free', createdAt: T0 }, []);
      return () => store.close();
    });

    /** Signs a person in at `at` with a session of an hour; answers the user and its session. */
    const signIn = async (p: Partial<SignInProfile> & { subject: string }, at: number, project = a, env: Env = 'live') => {
      const id = crypto.randomUUID();
      const r = await store.signIn.signIn(project.id, env, profile(p), origin, at, {
        session: { id, tokenHash: crypto.randomBytes(32).toString('hex'), createdAt: at, expiresAt: at + HOUR },
      });
      return { user: r.user, session: r.session! };
    };

    it('lists newest first in keyset pages; an unknown or foreign cursor answers undefined', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await signIn({ subject: `p${i}@x.test`, email: `p${i}@x.test`, emailVerified: true }, T0 + i * 1000)).user.id);
      const foreign = (await signIn({ subject: 'f@x.test', email: 'f@x.test' }, T0 + 9000, other)).user.id;
      const test = (await signIn({ subject: 't@x.test', email: 't@x.test' }, T0 + 9000, a, 'test')).user.id;
      const p1 = (await store.users.list(a.id, 'live', { limit: 2 }))!;
      expect(p1.users.map((u) => u.user.id)).toEqual([ids[4], ids[3]]);
      expect(p1.hasMore).toBe(true);
      const p2 = (await store.users.list(a.id, 'live', { limit: 2, after: ids[3] }))!;
      expect(p2.users.map((u) => u.user.id)).toEqual([ids[2], ids[1]]);
      const p3 = (await store.users.list(a.id, 'live', { limit: 2, after: ids[1] }))!;
      expect(p3).toMatchObject({ hasMore: false });
      expect(p3.users.map((u) => u.user.id)).toEqual([ids[0]]);
      expect(await store.users.list(a.id, 'live', { limit: 2, after: foreign })).toBeUndefined();
      expect(await store.users.list(a.id, 'live', { limit: 2, after: test })).toBeUndefined();
      expect(await store.users.list(a.id, 'live', { limit: 2, after: crypto.randomUUID() })).toBeUndefined();
      expect((await store.users.list(a.id, 'test', { limit: 10 }))!.users.map((u) => u.user.id)).toEqual([test]);
      // Same creation time: the id breaks the tie, so no user is skipped or repeated across pages.
      const same = [];
      for (let i = 0; i < 3; i++) same.push((await signIn({ subject: `s${i}`, provider: 'github' }, T0 + 50_000)).user.id);
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = (await store.users.list(a.id, 'live', { limit: 1, provider: 'github', ...(after ? { after } : {}) }))!;
        seen.push(...page.users.map((u) => u.user.id));
        if (!page.hasMore) break;
        after = page.users[0]!.user.id;
      }
      expect(seen.sort()).toEqual(same.sort());
    });

    it('searches by address (exact or prefix, any case, wildcards literal), number, identity and time ranges', async () => {
      const jane = (await signIn({ subject: 'Jane@Inbox.test', email: 'Jane@Inbox.test' }, T0)).user;
      const under = (await signIn({ subject: 'a_b@x.test', email: 'a_b@x.test' }, T0 + 1000)).user;
      const axb = (await signIn({ subject: 'axb@x.test', email: 'axb@x.test' }, T0 + 2000)).user;
      const pct = (await signIn({ subject: 'p%q@x.test', email: 'p%q@x.test' }, T0 + 3000)).user;
      const phone = (await signIn({ provider: 'sms', subject: '+79991234567', phone: '+79991234567' }, T0 + 4000)).user;
      const gh = (await signIn({ provider: 'github', subject: '4242', email: 'gh@x.test', name: 'GH' }, T0 + 5000)).user;
      await signIn({ subject: 'jane@inbox.test', email: 'jane@inbox.test' }, T0, other);
      const ids = async (q: Parameters<Store['users']['list']>[2]) => (await store.users.list(a.id, 'live', q))!.users.map((u) => u.user.id);
      expect(await ids({ limit: 10, email: 'JANE@inbox.TEST' })).toEqual([jane.id]);
      expect(await ids({ limit: 10, email: 'jane@inbox' })).toEqual([]);
      expect(await ids({ limit: 10, emailPrefix: 'jA' })).toEqual([jane.id]);
      expect(await ids({ limit: 10, emailPrefix: 'a_' })).toEqual([under.id]);
      expect(await ids({ limit: 10, emailPrefix: 'a' })).toEqual([axb.id, under.id]);
      expect(await ids({ limit: 10, emailPrefix: '%' })).toEqual([]);
      expect(await ids({ limit: 10, emailPrefix: '_' })).toEqual([]);
      expect(await ids({ limit: 10, emailPrefix: 'p%' })).toEqual([pct.id]);
      expect(await ids({ limit: 10, emailPrefix: '\\' })).toEqual([]);
      expect(await ids({ limit: 10, email: '%' })).toEqual([]);
      expect(await ids({ limit: 10, phone: '+79991234567' })).toEqual([phone.id]);
      expect(await ids({ limit: 10, provider: 'github' })).toEqual([gh.id]);
      expect(await ids({ limit: 10, provider: 'github', subject: '4242' })).toEqual([gh.id]);
      expect(await ids({ limit: 10, provider: 'github', subject: '4243' })).toEqual([]);
      expect(await ids({ limit: 10, createdAfter: T0 + 1000, createdBefore: T0 + 3000 })).toEqual([axb.id, under.id]);
      // A later sign-in moves last_sign_in, not created_at.
      await signIn({ subject: 'Jane@Inbox.test', email: 'Jane@Inbox.test' }, T0 + 100_000);
      expect(await ids({ limit: 10, lastSignInAfter: T0 + 50_000 })).toEqual([jane.id]);
      expect(await ids({ limit: 10, lastSignInBefore: T0 + 2000 })).toEqual([under.id]);
    });

    it('reads a user with its identities and live sessions; never another project or environment', async () => {
      const { user, session } = await signIn({ subject: 'ada@x.test', email: 'ada@x.test', emailVerified: true }, T0);
      await signIn({ provider: 'github', subject: '77', email: 'ada@x.test', emailVerified: true }, T0 + 1000);
      const expired = await signIn({ subject: 'ada@x.test', email: 'ada@x.test', emailVerified: true }, T0 - 2 * HOUR);
      const revoked = await signIn({ subject: 'ada@x.test', email: 'ada@x.test', emailVerified: true }, T0 + 2000);
      await store.signIn.revokeSessionById(revoked.session.id, T0 + 2500);
      const got = (await store.users.get(a.id, 'live', user.id))!;
      expect(got).toMatchObject({ user: { id: user.id, email: 'ada@x.test' }, phoneVerified: false, metadata: {}, ban: null });
      expect((await store.users.identities(a.id, 'live', user.id)).map((i) => `${i.provider}:${i.subject}`)).toEqual(['email:ada@x.test', 'github:77']);
      const live = await store.users.liveSessions(a.id, 'live', user.id, T0 + 3000);
      expect(live.map((s) => s.id)).not.toContain(expired.session.id);
      expect(live.map((s) => s.id)).not.toContain(revoked.session.id);
      expect(live.map((s) => s.id)).toContain(session.id);
      expect(await store.users.get(other.id, 'live', user.id)).toBeUndefined();
      expect(await store.users.get(a.id, 'test', user.id)).toBeUndefined();
      expect(await store.users.identities(other.id, 'live', user.id)).toEqual([]);
      expect(await store.users.liveSessions(other.id, 'live', user.id, T0)).toEqual([]);
    });

    it('updates flags, name and metadata; a verified address another user has verified is a conflict; foreign ids change nothing', async () => {
      const { user } = await signIn({ subject: 'bo@x.test', email: 'bo@x.test' }, T0);
      const sms = (await signIn({ provider: 'sms', subject: '+15550001', phone: '+15550001' }, T0)).user;
      const m = await store.users.update(a.id, 'live', user.id, { emailVerified: true, name: 'Bo', metadata: { plan: 'pro', n: [1, 2] } });
      expect(m).toMatchObject({ user: { emailVerified: true, name: 'Bo' }, metadata: { plan: 'pro', n: [1, 2] } });
      expect(await store.users.update(a.id, 'live', sms.id, { phoneVerified: true })).toMatchObject({ phoneVerified: true });
      const twin = (await signIn({ provider: 'github', subject: '9', email: 'bo@x.test', emailVerified: false }, T0)).user;
      // GitHub's unverified address does not link; the new user may not verify an address Bo has verified.
      expect(twin.id).not.toBe(user.id);
      expect(await store.users.update(a.id, 'live', twin.id, { emailVerified: true })).toBe('conflict');
      expect(await store.users.update(other.id, 'live', user.id, { name: 'Mallory' })).toBeUndefined();
      expect(await store.users.update(a.id, 'test', user.id, { name: 'Mallory' })).toBeUndefined();
      expect((await store.users.get(a.id, 'live', user.id))!.user.name).toBe('Bo');
    });

    it('an SMS sign-in verifies the number it proved: a new user, and a user who had it unverified', async () => {
      const sms = (await signIn({ provider: 'sms', subject: '+15550001111', phone: '+15550001111', phoneVerified: true }, 1_000)).user.id;
      expect((await store.users.get(a.id, 'live', sms))?.phoneVerified).toBe(true);
      const tg = (await signIn({ provider: 'telegram', subject: 'tg-1', phone: '+15550002222' }, 2_000)).user.id;
      expect((await store.users.get(a.id, 'live', tg))?.phoneVerified).toBe(false);
      // The same user's number proven later.
      await signIn({ provider: 'telegram', subject: 'tg-1', phone: '+15550002222', phoneVerified: true }, 3_000);
      expect((await store.users.get(a.id, 'live', tg))?.phoneVerified).toBe(true);
      // Another number than the user's is not marked.
      await signIn({ provider: 'telegram', subject: 'tg-1', phone: '+15550003333', phoneVerified: true }, 4_000);
      expect((await store.users.get(a.id, 'live', tg))?.user.phone).toBe('+15550002222');
    });

    it('bans and unbans, scoped; banOf reads the ban', async () => {
      const { user } = await signIn({ subject: 'cy@x.test', email: 'cy@x.test' }, T0);
      expect(await store.users.ban(other.id, 'live', user.id, { bannedAt: T0, reason: 'x', expiresAt: null })).toBeUndefined();
      expect(await store.users.banOf(user.id)).toBeNull();
      const ban = { bannedAt: T0, reason: 'spam', expiresAt: T0 + HOUR };
      expect(await store.users.ban(a.id, 'live', user.id, ban)).toMatchObject({ ban });
      expect(await store.users.banOf(user.id)).toEqual(ban);
      expect(await store.users.unban(other.id, 'live', user.id)).toBeUndefined();
      expect(await store.users.banOf(user.id)).toEqual(ban);
      expect(await store.users.unban(a.id, 'live', user.id)).toMatchObject({ ban: null });
      expect(await store.users.banOf(user.id)).toBeNull();
      expect(await store.users.banOf(crypto.randomUUID())).toBeNull();
    });

    it('deletes the personal data in one go: sessions, identities, codes, audit details, the user; others untouched', async () => {
      const { user, session } = await signIn({ subject: 'di@x.test', email: 'Di@x.test', emailVerified: true, phone: '+15550002' }, T0);
      const keep = await signIn({ subject: 'ed@x.test', email: 'ed@x.test', emailVerified: true }, T0);
      await store.signIn.signIn(a.id, 'live', profile({ provider: 'github', subject: '5', email: 'di@x.test', emailVerified: true }), origin, T0, {
        exchange: { codeHash: crypto.randomBytes(32).toString('hex'), expiresAt: T0 + 60_000, clientChallenge: null },
      });
      for (const [channel, target] of [
        ['email', 'di@x.test'],
        ['sms', '+15550002'],
        ['email', 'ed@x.test'],
      ] as const)
        await store.signIn.putOtp({ projectId: a.id, env: 'live', channel, target, codeHash: 'h', createdAt: T0, expiresAt: T0 + 60_000, testCode: null });
      const entry = (id: string, userId: string) => ({
        id,
        projectId: a.id,
        env: 'live' as const,
        type: 'session.created' as const,
        userId,
        sessionId: null,
        email: 'd***@x.test',
        phone: '+15*****02',
        provider: 'email',
        ip: '203.0.113.9',
        userAgent: 'store-test',
        reason: null,
        suppressed: 0,
        at: T0,
      });
      // Other features' rows of the user (passkeys, second factors) and the magic links of its address.
      expect(
        await store.passkeys.add({
          id: crypto.randomUUID(),
          projectId: a.id,
          env: 'live',
          userId: user.id,
          credentialId: `cred${n}`,
          publicKey: new Uint8Array([1, 2, 3]),
          counter: 0,
          transports: ['internal'],
          deviceType: 'multiDevice',
          backedUp: true,
          backupEligible: true,
          aaguid: '00000000-0000-0000-0000-000000000000',
          name: 'Laptop',
          rpId: 'app.test',
          createdAt: T0,
          lastUsedAt: null,
        }),
      ).toBe(true);
      expect(await store.twoFactor.startTotp(user.id, 'sealed-secret', T0)).toBe(true);
      await store.twoFactor.replaceBackupCodes(user.id, ['h1', 'h2'], T0);
      for (const email of ['di@x.test', 'ed@x.test'])
        await store.magicLinks.put({
          tokenHash: `${email}${n}`,
          projectId: a.id,
          env: 'live',
          email,
          callbackUrl: 'https://app.test/cb',
          clientChallenge: null,
          createdAt: T0,
          expiresAt: T0 + 600_000,
          testToken: null,
        });
      await store.audit.record(entry(`evt_${n}di`, user.id), {});
      await store.audit.record(entry(`evt_${n}ed`, keep.user.id), {});

      expect(await store.users.delete(other.id, 'live', user.id, T0 + 1000)).toBeUndefined();
      expect(await store.users.delete(a.id, 'test', user.id, T0 + 1000)).toBeUndefined();
      const gone = (await store.users.delete(a.id, 'live', user.id, T0 + 1000))!;
      expect(gone.user.id).toBe(user.id);
      expect(gone.revokedTokenHashes).toHaveLength(1);
      expect(await store.users.get(a.id, 'live', user.id)).toBeUndefined();
      expect(await store.signIn.userById(user.id)).toBeUndefined();
      expect(await store.signIn.sessionByHash(gone.revokedTokenHashes[0]!)).toBeUndefined();
      expect(await b.rows('SELECT * FROM auth_sessions WHERE id = $1', [session.id])).toEqual([]);
      expect(await b.rows('SELECT * FROM auth_identities WHERE user_id = $1', [user.id])).toEqual([]);
      expect(await b.rows('SELECT * FROM auth_exchange_codes WHERE user_id = $1', [user.id])).toEqual([]);
      expect((await b.rows('SELECT target FROM auth_otp_codes WHERE project_id = $1 ORDER BY target', [a.id])).map((r) => r.target)).toEqual(['ed@x.test']);
      expect(await store.passkeys.listForUser(a.id, 'live', user.id)).toEqual([]);
      expect(await store.twoFactor.totp(user.id)).toBeUndefined();
      expect(await store.twoFactor.backupCodesLeft(user.id)).toBe(0);
      expect((await b.rows('SELECT email FROM auth_magic_links WHERE project_id = $1', [a.id])).map((r) => r.email)).toEqual(['ed@x.test']);
      const [scrubbed] = await b.rows('SELECT * FROM auth_audit WHERE id = $1', [`evt_${n}di`]);
      expect(scrubbed).toMatchObject({ user_id: user.id, type: 'session.created', email: null, phone: null, ip: null, user_agent: null });
      const [kept] = await b.rows('SELECT * FROM auth_audit WHERE id = $1', [`evt_${n}ed`]);
      expect(kept).toMatchObject({ email: 'd***@x.test', ip: '203.0.113.9' });
      expect(await store.users.get(a.id, 'live', keep.user.id)).toBeDefined();
      expect(await store.users.liveSessions(a.id, 'live', keep.user.id, T0)).toHaveLength(1);
      expect(await store.users.delete(a.id, 'live', user.id, T0 + 2000)).toBeUndefined();
      // The address is free again: signing in with it makes a new user.
      const again = await signIn({ subject: 'di@x.test', email: 'di@x.test', emailVerified: true }, T0 + 3000);
      expect(again.user.id).not.toBe(user.id);
    });
  });
}

suite('sqlite', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-users-'));
  let current: Store | undefined;
  let db: Database.Database | undefined;
  return {
    async open() {
      current = await openStore({ dataDir: dir, storage }, localInvalidator());
      return current;
    },
    async rows(sql, params) {
      db ??= new Database(controlDbFile(dir), { readonly: true });
      return db.prepare(sql.replace(/\$\d+/g, '?')).all(...params);
    },
    async close() {
      db?.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});

suite('postgres', async () => {
  const t: TestDatabase = await createTestDatabase('pg_users');
  const client = new pg.Client({ connectionString: t.url });
  await client.connect();
  return {
    open: () => openStore({ dataDir: '', storage: { synchronous: 'FULL', maxBatch: 1000 }, databaseUrl: t.url }, localInvalidator()),
    rows: async (sql, params) => (await client.query(sql, params)).rows,
    async close() {
      await client.end();
      await t.drop();
    },
  };
});
