// The storage layer's group commit, its in-memory counters and its time-ordered ids,
// on a real SQLite file: what the hot path caches must always agree with the database.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store, type NewEmail } from '../../control/store/store.js';
import type { ApiError } from '../../core/errors.js';
import { uuidv7 } from '../../core/ids.js';

let dir: string;
let store: Store;
const projectId = 'prj_store';

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-store-'));
  store = new Store(dir, { synchronous: 'FULL', maxBatch: 1000 });
  await store.createProject({ id: projectId, slug: 'store', name: 'Store', plan: 'free', createdAt: Date.now() }, []);
});

afterEach(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

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

const rowCount = (sql: string, ...args: unknown[]) =>
  store.db
    .prepare(sql)
    .pluck()
    .get(...args) as number;

describe('group commit', () => {
  it('one group, one commit: a quota that runs out midway refuses exactly the emails beyond it', async () => {
    const outcomes = await Promise.allSettled(
      store.insertEmails(
        Array.from({ length: 8 }, () => email()),
        { daily: 5, monthly: 100 },
      ),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(5);
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(refused).toHaveLength(3);
    for (const r of refused) expect((r.reason as ApiError).code).toBe('QUOTA_EXCEEDED');
    // The counters written once at commit match what was stored.
    expect(rowCount('SELECT count(*) FROM emails')).toBe(5);
    expect(rowCount('SELECT count FROM usage_daily WHERE project_id = ?', projectId)).toBe(5);
    expect(rowCount("SELECT count FROM analytics_daily WHERE project_id = ? AND status = 'queued'", projectId)).toBe(5);
    expect(await store.usage(projectId, Date.now())).toEqual({ day: 5, month: 5 });
  });

  it('a write that fails after writing is undone with its counts; the rest of the group commits', async () => {
    const dup = email();
    const outcomes = await Promise.allSettled([
      store.insertEmail(dup, { daily: 100, monthly: 100 }),
      store.insertEmail({ ...dup }, { daily: 100, monthly: 100 }),
      store.insertEmail(email(), { daily: 100, monthly: 100 }),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    // The duplicate counted its usage before its insert failed: that count was taken back.
    expect(await store.usage(projectId, Date.now())).toEqual({ day: 2, month: 2 });
    expect(rowCount('SELECT count FROM usage_daily WHERE project_id = ?', projectId)).toBe(2);
    expect(rowCount("SELECT count FROM analytics_daily WHERE project_id = ? AND status = 'queued'", projectId)).toBe(2);
  });

  it('usage survives a restart: the month sums earlier days, the day starts at zero', async () => {
    const yesterday = Date.now() - 86_400_000;
    const sameMonth = new Date(yesterday).getUTCMonth() === new Date().getUTCMonth();
    await Promise.all(store.insertEmails([email(yesterday), email(yesterday), email()], { daily: 100, monthly: 100 }));
    store.close();
    store = new Store(dir, { synchronous: 'FULL', maxBatch: 1000 });
    expect(await store.usage(projectId, Date.now())).toEqual({ day: 1, month: sameMonth ? 3 : 1 });
    await expect(store.insertEmail(email(), { daily: 1, monthly: 100 })).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED' });
  });

  it('settles a durable write only after its commit, and a later reader sees it', async () => {
    const e = email();
    await store.insertEmail(e);
    const other = new (await import('better-sqlite3')).default(path.join(dir, 'postgate.db'), { readonly: true });
    try {
      expect(other.prepare('SELECT status FROM emails WHERE id = ?').pluck().get(e.id)).toBe('queued');
    } finally {
      other.close();
    }
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
