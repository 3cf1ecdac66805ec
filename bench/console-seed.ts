// Seeds a store with a large history, fast, for bench/console.ts: a million emails (each with its
// recipient and its events) over 30 days and ~100 projects, and 10,000 suppressions. Going through
// the public API would take hours, so the rows are written straight into the tables, on the
// backends' own connections (core/sqlite/open.ts for SQLite, with the migrations applied as control
// applies them; control/store/postgres/db.ts for PostgreSQL).
//
// The rows are copies of real ones: the bench first sends a delivered and a bounced email through a
// running stack, and each seeded email clones one of them (every column, whatever the migrations
// added), with its own id (UUIDv7 at its time), project, sender, recipient, subject and times. So
// the seeded data has exactly the shape control writes, and a column added later is carried along.
// SQLite: one transaction per 20,000 emails with prepared statements. PostgreSQL: multi-row
// INSERT … SELECT FROM unnest(arrays), 5,000 rows a statement.
import { uuidv7 } from '../core/ids.js';

export interface SeedProject {
  id: string;
  slug: string;
}

export interface SeedPlan {
  emails: number;
  suppressions: number;
  /** Sign-in events (auth_audit) of the first project. */
  authEvents: number;
  days: number;
  projects: SeedProject[];
  /** Ids of the two emails to clone (already in the store, with their recipients and events). */
  templates: { delivered: string; bounced: string };
  /** Webhook ids whose deliveries to add (a few per webhook, some failed). */
  webhooks: Array<{ id: string; projectId: string }>;
  now: number;
}

export interface SeedResult {
  emails: number;
  recipients: number;
  events: number;
  suppressions: number;
  deliveries: number;
  authEvents: number;
  seconds: number;
  /** A few seeded rows to query for: a recipient, a subject word, an email id. */
  probes: { to: string; subject: string; id: string; suppressed: string };
}

type Row = Record<string, unknown>;

/** What a backend gives the seeder: the columns of a table, rows to copy, and bulk inserts. */
interface Target {
  /** Columns the database fills itself (an autoincrement id) are left out. */
  columns(table: string): Promise<string[]>;
  hasTable(table: string): Promise<boolean>;
  rows(sql: string, params: unknown[]): Promise<Row[]>;
  run(sql: string, params?: unknown[]): Promise<void>;
  insert(table: string, columns: string[], rows: unknown[][]): Promise<void>;
  /** Runs `fn` in a transaction where the backend wants one. */
  batch(fn: () => Promise<void>): Promise<void>;
}

const DOMAINS = ['gmail.com', 'outlook.com', 'yahoo.com', 'icloud.com', 'gmx.de', 'mail.ru', 'proton.me', 'example-corp.com'];
const SUBJECTS = [
  'Your receipt #',
  'Reset your password',
  'Welcome aboard',
  'Your order has shipped #',
  'Weekly digest, week ',
  'Invoice available #',
  'Confirm your email address',
  'Your sign-in code',
  'Someone commented on your post',
  'Payment failed for invoice #',
  'Your trial ends soon',
  'New login from a new device',
];
const NAMES = ['ann', 'bob', 'carla', 'dmitri', 'eve', 'farid', 'grace', 'hiro', 'ines', 'jon', 'kate', 'li', 'maria', 'noor', 'oleg', 'pia'];

/** A small seeded PRNG (mulberry32): the same data on every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** Replaces every occurrence of the template's values inside a text column (JSON of the request, event details). */
function rewrite(value: unknown, swaps: Array<[string, string]>): unknown {
  // PostgreSQL hands JSON columns back parsed: rewritten as text, which it parses again on the way in.
  const text = value !== null && typeof value === 'object' && !Buffer.isBuffer(value) ? JSON.stringify(value) : value;
  if (typeof text !== 'string') return text;
  let out = text;
  for (const [a, b] of swaps) if (a) out = out.split(a).join(b);
  return out;
}

interface Template {
  email: Row;
  request: Row | undefined;
  recipient: Row;
  events: Row[];
  to: string;
}

async function template(t: Target, id: string, hasRequests: boolean): Promise<Template> {
  const [email] = await t.rows('SELECT * FROM emails WHERE id = $1', [id]);
  if (!email) throw new Error(`template email ${id} is not in the store`);
  const [recipient] = await t.rows('SELECT * FROM email_recipients WHERE email_id = $1', [id]);
  if (!recipient) throw new Error(`template email ${id} has no recipient`);
  const events = await t.rows('SELECT * FROM email_events WHERE email_id = $1 ORDER BY at', [id]);
  const request = hasRequests ? (await t.rows('SELECT * FROM email_requests WHERE email_id = $1', [id]))[0] : undefined;
  return { email, request, recipient, events, to: String(recipient.address) };
}

async function seed(t: Target, plan: SeedPlan): Promise<SeedResult> {
  const t0 = performance.now();
  const random = rng(42);
  const hasRequests = await t.hasTable('email_requests');
  const delivered = await template(t, plan.templates.delivered, hasRequests);
  const bounced = await template(t, plan.templates.bounced, hasRequests);
  const cols = {
    emails: await t.columns('emails'),
    recipients: await t.columns('email_recipients'),
    events: await t.columns('email_events'),
    requests: hasRequests ? await t.columns('email_requests') : [],
  };
  const fromOf = (x: Template) => String(x.email.from_addr);
  const subjectOf = (x: Template) => String(x.email.subject);
  const usage = new Map<string, number>();
  const statuses = new Map<string, number>();
  const count = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  const span = plan.days * 86_400_000;
  const start = plan.now - span;
  const probes = { to: '', subject: '', id: '', suppressed: '' };
  const emailIds: string[] = [];
  let recipients = 0;
  let events = 0;
  const CHUNK = 20_000;

  for (let base = 0; base < plan.emails; base += CHUNK) {
    const n = Math.min(CHUNK, plan.emails - base);
    const emails: unknown[][] = [];
    const recs: unknown[][] = [];
    const evs: unknown[][] = [];
    const reqs: unknown[][] = [];
    for (let k = 0; k < n; k++) {
      const i = base + k;
      // Spread evenly over the days, oldest first (ids are time-ordered), with a little jitter.
      const at = Math.floor(start + (i / plan.emails) * span + random() * 1000);
      // A few big projects and a long tail (as real tenants are): the square of a uniform number.
      const project = plan.projects[Math.floor(random() ** 2 * plan.projects.length)]!;
      const tpl = i % 50 === 7 ? bounced : delivered;
      const id = uuidv7(at);
      const to = `${NAMES[i % NAMES.length]}.${i}@${DOMAINS[Math.floor(random() * DOMAINS.length)]}`;
      const s = SUBJECTS[i % SUBJECTS.length]!;
      // The probe (the middle email) has a subject of its own: searching for it walks to the search's bound.
      const subject =
        i === Math.floor(plan.emails / 2) ? `Refund approved for order R-${i}` : s.endsWith('#') || s.endsWith(' ') ? `${s}${1000 + (i % 90_000)}` : s;
      const from = `hello@${project.slug}.test`;
      const swaps: Array<[string, string]> = [
        [tpl.to, to],
        [subjectOf(tpl), subject],
        [fromOf(tpl), from],
        [String(tpl.email.id), id],
      ];
      const created = Number(tpl.email.created_at);
      const shift = (v: unknown) => (v === null || v === undefined ? v : at + (Number(v) - created));
      emails.push(
        cols.emails.map((c) => {
          switch (c) {
            case 'id':
              return id;
            case 'project_id':
              return project.id;
            case 'from_addr':
              return from;
            case 'subject':
              return subject;
            case 'created_at':
              return at;
            case 'updated_at':
            case 'dispatched_at':
              return shift(tpl.email[c]);
            default:
              return rewrite(tpl.email[c], swaps);
          }
        }),
      );
      if (tpl.request) reqs.push(cols.requests.map((c) => (c === 'email_id' ? id : rewrite(tpl.request![c], swaps))));
      recs.push(cols.recipients.map((c) => (c === 'email_id' ? id : c === 'address' ? to : c === 'updated_at' ? shift(tpl.recipient[c]) : tpl.recipient[c])));
      for (const ev of tpl.events)
        evs.push(
          cols.events.map((c) =>
            c === 'email_id' ? id : c === 'recipient' ? (ev.recipient ? to : ev.recipient) : c === 'at' ? shift(ev.at) : rewrite(ev[c], swaps),
          ),
        );
      recipients++;
      events += tpl.events.length;
      count(usage, `${project.id}\n${dayOf(at)}`);
      count(statuses, `${project.id}\n${dayOf(at)}\n${String(tpl.email.status)}`);
      if (i === Math.floor(plan.emails / 2)) Object.assign(probes, { to, subject, id });
      if (i % Math.max(1, Math.floor(plan.emails / plan.suppressions)) === 0) emailIds.push(id);
    }
    await t.batch(async () => {
      await t.insert('emails', cols.emails, emails);
      if (reqs.length) await t.insert('email_requests', cols.requests, reqs);
      await t.insert('email_recipients', cols.recipients, recs);
      await t.insert('email_events', cols.events, evs);
    });
    if ((base / CHUNK) % 10 === 9) process.stderr.write(`[seed] ${base + n} emails\n`);
  }

  // The daily counts the project pages read, as control would have kept them.
  await t.batch(async () => {
    await t.run('DELETE FROM usage_daily');
    await t.insert(
      'usage_daily',
      ['project_id', 'day', 'count'],
      [...usage].map(([k, v]) => [...k.split('\n'), v]),
    );
    await t.run('DELETE FROM analytics_daily');
    await t.insert(
      'analytics_daily',
      ['project_id', 'day', 'status', 'count'],
      [...statuses].map(([k, v]) => [...k.split('\n'), v]),
    );
  });

  // Suppressions: mostly bounces, some complaints and unsubscribes.
  const supCols = await t.columns('suppressions');
  const reasons = ['bounced', 'bounced', 'bounced', 'complained', 'unsubscribed'];
  const sups: unknown[][] = [];
  for (let i = 0; i < plan.suppressions; i++) {
    const project = plan.projects[i % plan.projects.length]!;
    const address = `gone.${i}@${DOMAINS[i % DOMAINS.length]}`;
    if (i === Math.floor(plan.suppressions / 2)) probes.suppressed = address;
    const values: Row = {
      project_id: project.id,
      address,
      reason: reasons[i % reasons.length],
      scope: reasons[i % reasons.length] === 'unsubscribed' ? 'bulk' : 'all',
      email_id: emailIds[i % Math.max(1, emailIds.length)] ?? null,
      created_at: Math.floor(start + (i / plan.suppressions) * span),
    };
    sups.push(supCols.map((c) => values[c] ?? null));
  }
  for (let i = 0; i < sups.length; i += 5000) await t.batch(() => t.insert('suppressions', supCols, sups.slice(i, i + 5000)));

  // Sign-in events of the first project (the one the bench reads): AUTH_EVENTS over the days, one in five failed.
  const authCols = await t.columns('auth_audit');
  const auth: unknown[][] = [];
  const providers = ['email', 'email', 'google', 'github', 'apple'];
  const first = plan.projects[0]!;
  for (let i = 0; i < plan.authEvents; i++) {
    const at = Math.floor(start + (i / plan.authEvents) * span);
    const failed = i % 5 === 2;
    const values: Row = {
      id: `evt_${uuidv7(at).replace(/-/g, '')}`,
      project_id: first.id,
      env: 'live',
      type: failed ? 'sign_in.failed' : 'session.created',
      user_id: failed ? null : `usr_${i % 5000}`,
      session_id: failed ? null : `ses_${i}`,
      email: `${NAMES[i % NAMES.length]}.${i % 5000}@${DOMAINS[i % DOMAINS.length]}`,
      provider: providers[i % providers.length],
      ip: `198.51.100.${i % 250}`,
      user_agent: 'Mozilla/5.0',
      reason: failed ? 'invalid_code' : null,
      suppressed: 0,
      at,
    };
    auth.push(authCols.map((c) => values[c] ?? null));
  }
  for (let i = 0; i < auth.length; i += 20_000) await t.batch(() => t.insert('auth_audit', authCols, auth.slice(i, i + 20_000)));

  // Webhook deliveries: 200 per endpoint over the last days, one in ten failed with an answer code.
  const delCols = await t.columns('webhook_deliveries');
  const dels: unknown[][] = [];
  for (const w of plan.webhooks)
    for (let i = 0; i < 200; i++) {
      const at = plan.now - Math.floor((i / 200) * 3 * 86_400_000);
      const failed = i % 10 === 4;
      const values: Row = {
        id: `msg_${uuidv7(at).replace(/-/g, '')}`,
        webhook_id: w.id,
        project_id: w.projectId,
        payload: JSON.stringify({ type: 'email.delivered', created_at: new Date(at).toISOString(), data: { email_id: emailIds[i % emailIds.length] } }),
        attempt: failed ? 6 : 1,
        next_attempt_at: at,
        status: failed ? 'failed' : 'delivered',
        last_error: failed ? 'HTTP 500' : null,
        created_at: at,
        delivered_at: failed ? null : at + 120,
      };
      dels.push(delCols.map((c) => values[c] ?? null));
    }
  if (dels.length) await t.batch(() => t.insert('webhook_deliveries', delCols, dels));

  return {
    emails: plan.emails,
    recipients,
    events,
    suppressions: plan.suppressions,
    deliveries: dels.length,
    authEvents: auth.length,
    seconds: Math.round((performance.now() - t0) / 100) / 10,
    probes,
  };
}

/** SQLite: the control database in `dataDir` (control must not be running), migrated as control migrates it. */
export async function seedSqlite(dataDir: string, plan: SeedPlan): Promise<SeedResult> {
  const { openDatabase } = await import('../core/sqlite/open.js');
  const { controlDbFile } = await import('../core/data-files.js');
  const { migrations } = await import('../control/store/sqlite/migrations.js');
  const { RENAMED_MIGRATIONS } = await import('../control/store/renamed-migrations.js');
  const db = openDatabase(controlDbFile(dataDir), migrations, { renamedMigrations: RENAMED_MIGRATIONS });
  const statements = new Map<string, import('better-sqlite3').Statement<unknown[]>>();
  const sqlite = (sql: string) => sql.replace(/\$\d+/g, '?');
  const target: Target = {
    async columns(table) {
      const info = db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string; type: string; pk: number }>;
      // An INTEGER PRIMARY KEY is the rowid: SQLite numbers it.
      return info.filter((c) => !(c.pk === 1 && c.type.toUpperCase() === 'INTEGER' && info.filter((x) => x.pk > 0).length === 1)).map((c) => c.name);
    },
    async hasTable(table) {
      return !!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table);
    },
    async rows(sql, params) {
      return db.prepare(sqlite(sql)).all(...params) as Row[];
    },
    async run(sql, params = []) {
      db.prepare(sqlite(sql)).run(...params);
    },
    async insert(table, columns, rows) {
      const key = `${table}(${columns.join()})`;
      let st = statements.get(key);
      if (!st) statements.set(key, (st = db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`)));
      for (const r of rows) st.run(...r);
    },
    async batch(fn) {
      db.exec('BEGIN');
      try {
        await fn();
        db.exec('COMMIT');
      } catch (err) {
        db.exec('ROLLBACK');
        throw err;
      }
    },
  };
  try {
    const result = await seed(target, plan);
    db.exec('ANALYZE');
    db.pragma('wal_checkpoint(TRUNCATE)');
    return result;
  } finally {
    db.close();
  }
}

/** PostgreSQL: the database at `url`, migrated as control migrates it. */
export async function seedPostgres(url: string, plan: SeedPlan): Promise<SeedResult> {
  const { PgDb } = await import('../control/store/postgres/db.js');
  const { migrate } = await import('../control/store/postgres/migrations.js');
  const db = new PgDb(url);
  await db.tx((tx) => migrate(tx));
  const types = new Map<string, Map<string, string>>();
  const typesOf = async (table: string) => {
    let m = types.get(table);
    if (!m) {
      const { rows } = await db.query<{ column_name: string; udt_name: string; column_default: string | null; is_identity: string }>(
        'SELECT column_name, udt_name, column_default, is_identity FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position',
        [table],
      );
      m = new Map(
        rows.filter((r) => r.is_identity !== 'YES' && !r.column_default?.startsWith('nextval(')).map((r) => [r.column_name, r.udt_name.replace(/^_/, '')]),
      );
      types.set(table, m);
    }
    return m;
  };
  const target: Target = {
    async columns(table) {
      return [...(await typesOf(table)).keys()];
    },
    async hasTable(table) {
      return (await typesOf(table)).size > 0;
    },
    async rows(sql, params) {
      return (await db.query<Row>(sql, params)).rows;
    },
    async run(sql, params = []) {
      await db.query(sql, params);
    },
    async insert(table, columns, rows) {
      const t = await typesOf(table);
      // One statement per 5,000 rows: each column as one array parameter, unnested back into rows.
      for (let i = 0; i < rows.length; i += 5000) {
        const part = rows.slice(i, i + 5000);
        const arrays = columns.map((_, c) => part.map((r) => r[c] ?? null));
        const list = columns.map((c, k) => `$${k + 1}::${t.get(c)}[]`).join(', ');
        await db.query(`INSERT INTO ${table} (${columns.join(', ')}) SELECT * FROM unnest(${list})`, arrays);
      }
    },
    async batch(fn) {
      // Autocommit per statement: a crash mid-seed leaves a database the bench drops anyway.
      await fn();
    },
  };
  try {
    const result = await seed(target, plan);
    await db.query('ANALYZE');
    return result;
  } finally {
    await db.close();
  }
}
