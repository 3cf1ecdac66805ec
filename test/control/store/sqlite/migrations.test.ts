// A data dir written by the previous schema opens with the current code: recipient
// positions come from the old row order and the system flag from the old request JSON, the
// request moves to a table of its own, and steps recorded under their ids from before the
// renumbering (control/store/renamed-migrations.ts) are not applied again.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Migration } from '../../../../core/sqlite/open.js';
import { migrations } from '../../../../control/store/sqlite/migrations.js';
import { openStore } from '../../../../control/store/open.js';
import { RENAMED_MIGRATIONS } from '../../../../control/store/renamed-migrations.js';
import { localInvalidator } from '../../../../core/invalidation.js';

const NEW = '0007_recipient_position_system_flag';
let dir: string;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-migrate-'));
});

afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

it('backfills recipient positions and the system flag of a database from before them', async () => {
  const previous = migrations.slice(
    0,
    migrations.findIndex((m) => m.id === NEW),
  );
  // Every step before 0007 (later steps came after it and run too when the store opens).
  expect(previous.map((m) => m.id)).not.toContain(NEW);
  expect(previous.length).toBeGreaterThanOrEqual(6);
  const file = path.join(dir, 'postgate.db');
  const old = openDatabase(file, previous);
  const now = Date.now();
  const request = (o: Record<string, unknown> = {}) =>
    JSON.stringify({
      from: 'a@acme.test',
      to: ['x@inbox.test'],
      cc: [],
      bcc: [],
      reply_to: [],
      subject: 's',
      text: 'code 123456',
      html: '<b>123456</b>',
      tags: [],
      headers: {},
      bulk: false,
      ...o,
    });
  old.prepare("INSERT INTO projects (id, slug, name, status, plan, created_at) VALUES ('p1', 'p1', 'P', 'active', 'free', ?)").run(now);
  const insertEmail = old.prepare(
    "INSERT INTO emails (id, project_id, status, from_addr, subject, bulk, request, created_at, updated_at, reached) VALUES (?, 'p1', 'queued', 'a@acme.test', 's', 0, ?, ?, ?, 'queued')",
  );
  insertEmail.run('e-multi', request(), now, now);
  insertEmail.run('e-other', request(), now, now);
  insertEmail.run('e-system', request({ system: true }), now, now);
  insertEmail.run('e-not-system', request({ system: false }), now, now);
  // Rows of two emails interleaved, in an order that is neither alphabetical nor by key.
  const insertRecipient = old.prepare("INSERT INTO email_recipients (email_id, address, kind, status, updated_at) VALUES (?, ?, ?, 'queued', ?)");
  for (const [emailId, address, kind] of [
    ['e-multi', 'zed@inbox.test', 'to'],
    ['e-other', 'bob@inbox.test', 'to'],
    ['e-multi', 'amy@inbox.test', 'to'],
    ['e-other', 'yan@inbox.test', 'cc'],
    ['e-multi', 'mia@inbox.test', 'bcc'],
    ['e-system', 'x@inbox.test', 'to'],
    ['e-not-system', 'x@inbox.test', 'to'],
  ])
    insertRecipient.run(emailId, address, kind, now);
  old.close();

  const store = await openStore({ dataDir: dir, storage: { synchronous: 'NORMAL', maxBatch: 100 } }, localInvalidator());
  try {
    expect(await Promise.all([0, 1, 2, 3].map((i) => store.emails.recipientAt('e-multi', i)))).toEqual([
      'zed@inbox.test',
      'amy@inbox.test',
      'mia@inbox.test',
      undefined,
    ]);
    expect(await Promise.all([0, 1].map((i) => store.emails.recipientAt('e-other', i)))).toEqual(['bob@inbox.test', 'yan@inbox.test']);
    expect((await store.emails.get('p1', 'e-multi'))?.recipients.map((r) => r.kind)).toEqual(['to', 'to', 'bcc']);
    // Only the flagged email loses its body once dispatched.
    await store.emails.markDispatched(['e-system', 'e-not-system'], now);
    expect(JSON.parse((await store.emails.get('p1', 'e-system'))!.email.request)).not.toHaveProperty('text');
    expect(JSON.parse((await store.emails.get('p1', 'e-not-system'))!.email.request)).toHaveProperty('text');
  } finally {
    await store.close();
  }

  const db = new Database(path.join(dir, 'postgate.db'), { readonly: true });
  try {
    expect(db.prepare('SELECT id, system FROM emails ORDER BY id').all()).toEqual([
      { id: 'e-multi', system: 0 },
      { id: 'e-not-system', system: 0 },
      { id: 'e-other', system: 0 },
      { id: 'e-system', system: 1 },
    ]);
    expect(db.prepare("SELECT address, position FROM email_recipients WHERE email_id = 'e-multi' ORDER BY position").all()).toEqual([
      { address: 'zed@inbox.test', position: 0 },
      { address: 'amy@inbox.test', position: 1 },
      { address: 'mia@inbox.test', position: 2 },
    ]);
    expect(db.prepare('SELECT id FROM schema_migrations WHERE id = ?').pluck().get(NEW)).toBe(NEW);
  } finally {
    db.close();
  }
});

it('moves each email request out of the emails row, and a status change leaves it as it was', async () => {
  const before = migrations.slice(
    0,
    migrations.findIndex((m) => m.id === '0013_email_requests'),
  );
  expect(before.length).toBeLessThan(migrations.length);
  const file = path.join(dir, 'postgate.db');
  const old = openDatabase(file, before);
  const now = Date.now();
  const big = JSON.stringify({ from: 'a@acme.test', to: ['x@inbox.test'], subject: 's', html: `<p>${'y'.repeat(60_000)}</p>`, tags: ['welcome'] });
  const small = JSON.stringify({ from: 'a@acme.test', to: ['x@inbox.test'], subject: 's', text: 'hi', tags: [] });
  old.prepare("INSERT INTO projects (id, slug, name, status, plan, created_at) VALUES ('p1', 'p1', 'P', 'active', 'free', ?)").run(now);
  const insertEmail = old.prepare(
    "INSERT INTO emails (id, project_id, status, from_addr, subject, bulk, request, created_at, updated_at, reached) VALUES (?, 'p1', 'queued', 'a@acme.test', 's', 0, ?, ?, ?, 'queued')",
  );
  insertEmail.run('e-big', big, now, now);
  insertEmail.run('e-small', small, now + 1, now + 1);
  const insertRecipient = old.prepare(
    "INSERT INTO email_recipients (email_id, address, kind, status, updated_at, position) VALUES (?, 'x@inbox.test', 'to', 'queued', ?, 0)",
  );
  insertRecipient.run('e-big', now);
  insertRecipient.run('e-small', now);
  old.close();

  const store = await openStore({ dataDir: dir, storage: { synchronous: 'NORMAL', maxBatch: 100 } }, localInvalidator());
  try {
    expect((await store.emails.get('p1', 'e-big'))!.email.request).toBe(big);
    expect((await store.emails.get('p1', 'e-small'))!.email.request).toBe(small);
    expect((await store.emails.list('p1', { limit: 10, tag: 'welcome' })).emails.map((e) => e.id)).toEqual(['e-big']);
    expect((await store.emails.undispatched(10)).map((e) => [e.id, e.request])).toEqual([
      ['e-big', big],
      ['e-small', small],
    ]);
    await store.emails.markDispatched(['e-big'], now);
    await store.deliveryLog.apply('gw', [{ seq: 1, emailId: 'e-big', type: 'sent', recipient: 'x@inbox.test', at: now, attempt: 1, details: {} }]);
    const after = (await store.emails.get('p1', 'e-big'))!;
    expect(after.email.status).toBe('sent');
    expect(after.email.request).toBe(big);
  } finally {
    await store.close();
  }

  const db = new Database(file, { readonly: true });
  try {
    const columns = (db.prepare('PRAGMA table_info(emails)').all() as Array<{ name: string }>).map((c) => c.name);
    expect(columns).not.toContain('request');
    expect(db.prepare('SELECT count(*) FROM email_requests').pluck().get()).toBe(2);
  } finally {
    db.close();
  }
});

describe('a database migrated before the steps were renumbered', () => {
  /** The same steps, in the same order, under the ids they had then. */
  const former = Object.fromEntries(Object.entries(RENAMED_MIGRATIONS).map(([old, now]) => [now, old]));
  const underOldIds = (steps: readonly Migration[]) => steps.map((m) => ({ ...m, id: former[m.id] ?? m.id }));
  const open = () => openStore({ dataDir: dir, storage: { synchronous: 'NORMAL', maxBatch: 100 } }, localInvalidator());
  const recorded = (file: string) => {
    const db = new Database(file, { readonly: true });
    try {
      return db.prepare('SELECT id FROM schema_migrations ORDER BY rowid').pluck().all() as string[];
    } finally {
      db.close();
    }
  };

  it('opens without applying any step again, its data kept and its rows renamed to the new ids', async () => {
    const file = path.join(dir, 'postgate.db');
    const old = openDatabase(file, underOldIds(migrations));
    expect(old.prepare("SELECT count(*) FROM schema_migrations WHERE id LIKE 'auth_%'").pluck().get()).toBe(3);
    old.prepare("INSERT INTO projects (id, slug, name, status, plan, created_at) VALUES ('p1', 'p1', 'P', 'active', 'free', 1)").run();
    old.close();
    // What this test guards against: the current ids alone would run the renamed steps again.
    fs.copyFileSync(file, path.join(dir, 'copy.db'));
    expect(() => openDatabase(path.join(dir, 'copy.db'), migrations).close()).toThrow(/already exists|duplicate column/);

    const store = await open();
    try {
      expect((await store.projects.bySlug('p1'))?.name).toBe('P');
    } finally {
      await store.close();
    }
    expect(recorded(file)).toEqual(migrations.map((m) => m.id));
  });

  it('a database that stopped partway applies the rest once, recorded under the new ids', async () => {
    const file = path.join(dir, 'postgate.db');
    const upTo = migrations.findIndex((m) => m.id === '0009_webhook_enabled') + 1;
    openDatabase(file, underOldIds(migrations.slice(0, upTo))).close();
    expect(recorded(file)).toContain('0008_webhook_enabled');

    await (await open()).close();
    expect(recorded(file)).toEqual(migrations.map((m) => m.id));
    const db = new Database(file, { readonly: true });
    try {
      // A step applied after the renumbering really ran: its table is there.
      expect(
        db.prepare("SELECT count(*) FROM sqlite_master WHERE name IN ('auth_audit', 'idempotency_keys', 'email_attachments', 'email_requests')").pluck().get(),
      ).toBe(4);
    } finally {
      db.close();
    }
  });
});

describe('the browser binding becomes the default (0015)', () => {
  it('keeps it off, written down, for the projects that existed before; a new project has it unset (on)', async () => {
    const file = path.join(dir, 'postgate.db');
    const old = openDatabase(
      file,
      migrations.slice(
        0,
        migrations.findIndex((m) => m.id === '0015_auth_code_verifier_default'),
      ),
    );
    old.prepare("INSERT INTO projects (id, slug, name, status, plan, created_at) VALUES ('p1', 'p1', 'P1', 'active', 'free', 1)").run();
    old.prepare("INSERT INTO projects (id, slug, name, status, plan, created_at) VALUES ('p2', 'p2', 'P2', 'active', 'free', 1)").run();
    old.prepare("INSERT INTO projects (id, slug, name, status, plan, created_at) VALUES ('p3', 'p3', 'P3', 'active', 'free', 1)").run();
    // Settings written before (the column NULL unless set), one project with the binding on.
    old.prepare("INSERT INTO auth_settings (project_id, session_ttl_seconds, updated_at) VALUES ('p2', 3600, 1)").run();
    old.prepare("INSERT INTO auth_settings (project_id, require_code_verifier, updated_at) VALUES ('p3', 1, 1)").run();
    old.close();

    const store = await openStore({ dataDir: dir, storage: { synchronous: 'NORMAL', maxBatch: 100 } }, localInvalidator());
    try {
      expect((await store.signIn.settings('p1')).requireCodeVerifier).toBe(false);
      expect(await store.signIn.settings('p2')).toMatchObject({ sessionTtlSeconds: 3600, requireCodeVerifier: false });
      expect((await store.signIn.settings('p3')).requireCodeVerifier).toBe(true);
      await store.projects.create({ id: 'p4', slug: 'p4', name: 'P4', plan: 'free', createdAt: 2 }, []);
      expect((await store.signIn.settings('p4')).requireCodeVerifier).toBeNull();
    } finally {
      await store.close();
    }
  });
});
