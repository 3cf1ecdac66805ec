// The SQLite store's group commit, its in-memory counters and its time-ordered ids,
// on a real file: what the hot path keeps in memory must always agree with what a
// fresh store reads back from the database.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NewEmail, Store } from '../../../../control/store/index.js';
import { openStore } from '../../../../control/store/open.js';
import { localInvalidator } from '../../../../core/invalidation.js';
import { uuidv7 } from '../../../../core/ids.js';

let dir: string;
let store: Store;
const projectId = 'prj_store';
const open = () => openStore({ dataDir: dir, storage: { synchronous: 'FULL', maxBatch: 1000 } }, localInvalidator());

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-store-'));
  store = await open();
  await store.projects.create({ id: projectId, slug: 'store', name: 'Store', plan: 'free', createdAt: Date.now() }, []);
});

afterEach(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A fresh store on the same file: it knows only what was committed. */
async function reopen(): Promise<void> {
  await store.close();
  store = await open();
}

const email = (at = Date.now(), to = 'r@inbox.test'): NewEmail => ({
  id: uuidv7(at),
  projectId,
  status: 'queued',
  from: 'a@acme.test',
  subject: 's',
  bulk: false,
  createdAt: at,
  request: JSON.stringify({ from: 'a@acme.test', to: [to], cc: [], bcc: [], reply_to: [], subject: 's', text: 't', tags: [], headers: {}, bulk: false }),
  recipients: [{ address: to, kind: 'to' }],
});

const queuedToday = async () =>
  (await store.analytics.daily(projectId, '0000-00-00', '9999-99-99')).filter((r) => r.status === 'queued').reduce((n, r) => n + r.count, 0);

describe('group commit', () => {
  it('one group, one commit: a quota that runs out midway refuses exactly the emails beyond it', async () => {
    const list = Array.from({ length: 8 }, () => email());
    const outcomes = await Promise.all(store.emails.acceptMany(list, { quota: { daily: 5, monthly: 100 } }));
    expect(outcomes.filter((o) => o.kind === 'accepted')).toHaveLength(5);
    expect(outcomes.filter((o) => o.kind === 'quota')).toHaveLength(3);
    // The counters written once at commit match what was stored.
    expect(await store.analytics.usage(projectId, Date.now())).toEqual({ day: 5, month: 5 });
    expect(await queuedToday()).toBe(5);
    await reopen();
    expect((await Promise.all(list.map((e) => store.emails.get(projectId, e.id)))).filter(Boolean)).toHaveLength(5);
    expect(await store.analytics.usage(projectId, Date.now())).toEqual({ day: 5, month: 5 });
  });

  it('a write that fails after writing is undone with its counts; the rest of the group commits', async () => {
    const dup = email();
    const outcomes = await Promise.allSettled([
      store.emails.accept(dup, { quota: { daily: 100, monthly: 100 } }),
      store.emails.accept({ ...dup }, { quota: { daily: 100, monthly: 100 } }),
      store.emails.accept(email(), { quota: { daily: 100, monthly: 100 } }),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    // The duplicate counted its usage before its insert failed: that count was taken back.
    expect(await store.analytics.usage(projectId, Date.now())).toEqual({ day: 2, month: 2 });
    expect(await queuedToday()).toBe(2);
    await reopen();
    expect(await store.analytics.usage(projectId, Date.now())).toEqual({ day: 2, month: 2 });
  });

  it('usage survives a restart: the month sums earlier days, the day starts at zero', async () => {
    const yesterday = Date.now() - 86_400_000;
    const sameMonth = new Date(yesterday).getUTCMonth() === new Date().getUTCMonth();
    await Promise.all(store.emails.acceptMany([email(yesterday), email(yesterday), email()], { quota: { daily: 100, monthly: 100 } }));
    await reopen();
    expect(await store.analytics.usage(projectId, Date.now())).toEqual({ day: 1, month: sameMonth ? 3 : 1 });
    expect(await store.emails.accept(email(), { quota: { daily: 1, monthly: 100 } })).toEqual({ kind: 'quota', period: 'daily', limit: 1 });
  });

  it('settles a durable write only after its commit, and another reader of the file sees it', async () => {
    const e = email();
    await store.emails.accept(e);
    const other = await open();
    try {
      expect((await other.emails.get(projectId, e.id))?.email.status).toBe('queued');
    } finally {
      await other.close();
    }
  });

  it('the platform’s own mail keeps no body once dispatched; other mail keeps it', async () => {
    const system = { ...email(), system: true };
    const own = email();
    await Promise.all(store.emails.acceptMany([system, own]));
    await store.emails.markDispatched([system.id, own.id], Date.now());
    const bodyOf = async (id: string) => JSON.parse((await store.emails.get(projectId, id))!.email.request) as Record<string, unknown>;
    expect(await bodyOf(system.id)).not.toHaveProperty('text');
    expect(await bodyOf(system.id)).toMatchObject({ to: ['r@inbox.test'], subject: 's' });
    expect(await bodyOf(own.id)).toHaveProperty('text', 't');
    expect(await store.emails.undispatched(10)).toEqual([]);
  });
});

describe('uuidv7', () => {
  it('is a version 7 UUID, ordered by time, unique within a millisecond', () => {
    const at = Date.UTC(2026, 10, 22, 12, 0, 0);
    const ids = Array.from({ length: 1000 }, (_, i) => uuidv7(at + Math.floor(i / 100)));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(1000);
    expect(ids[0]!.slice(0, 13).replace('-', '')).toBe(at.toString(16).padStart(12, '0'));
    // Later milliseconds sort after earlier ones.
    for (let i = 100; i < ids.length; i += 100) expect(ids[i]! > ids[i - 1]!).toBe(true);
  });
});
