// The gateway's own store (its SQLite file, separate from control's): the event
// outbox that control drains over gRPC, the ids Haraka has queued, which make
// Enqueue idempotent across retries and crashes, and the warm-up usage counters
// of pacing, and the queue files whose delivery is over (so a crash before Haraka
// removes one cannot send it again). All of the gateway's SQL is here.
import { openDatabase, type Db, type Migration } from '../../core/sqlite/open.js';
import { GroupWriter } from '../../core/sqlite/group-writer.js';
import type { DeliveryEventType } from '../../common/status.js';

/** What the outbox carries: delivery events, and mail received for a receiving domain (gateway/inbound/receive.ts). */
export type OutboxEventType = DeliveryEventType | 'received';

export interface NewDeliveryEvent {
  emailId: string;
  type: OutboxEventType;
  /** One recipient address; every event the gateway writes names one. */
  recipient: string;
  atMs: number;
  /** Remote MX host name (the exchange, not its IP), '' when none was reached. */
  mx: string;
  /** SMTP response text, or why delivery failed before any SMTP exchange. */
  response: string;
  attempt: number;
  /** RFC 3463 code such as 5.1.1, '' when unknown. */
  enhancedCode: string;
  /** For deferred events: when the next attempt is due (epoch ms), else 0. */
  nextAttemptMs: number;
  /** Who caused a delay or refusal: 'receiver', 'network', 'pacing', 'shaping' or 'suspended'; '' otherwise. */
  cause?: string;
  /** cause shaping: the rule's name; suspended: operator:<suspension id>; '' otherwise. */
  rule?: string;
  /** Receiving provider of the recipient's domain (google, microsoft, ..., other). */
  provider?: string;
  /** Inbound reports: the token of the address they came to (control checks it). */
  token?: string;
  /** smtp | dsn | arf | mailto; '' = smtp. */
  source?: string;
  /** The attempt's TLS (gateway/tls/tls-info.ts TlsInfo) as JSON; '' when nothing is known. */
  tls?: string;
  /** type 'received': the InboundMail (proto) as bytes, kept apart from the events (read one at a time: inboundOf). */
  inbound?: Uint8Array;
}

export interface DeliveryEventRow extends Required<Omit<NewDeliveryEvent, 'inbound'>> {
  seq: number;
}

/** Messages counted against a project's warm-up norm at one provider on one day. */
export interface UsageRow {
  day: string;
  projectId: string;
  provider: string;
  transactional: number;
  bulk: number;
}

/**
 * 'pending': Enqueue is handing the message to Haraka (or crashed while doing so);
 * 'queued': Haraka has the message on disk, so a retried Enqueue is a duplicate.
 */
export type EnqueueState = 'pending' | 'queued';

export interface OutboxOptions {
  synchronous?: 'FULL' | 'NORMAL';
  maxBatch?: number;
  /** The supervisor checkpoints the file (core/sqlite/open.ts). */
  externalCheckpoints?: boolean;
}

const migrations: Migration[] = [
  {
    id: '0001_outbox',
    sql: `
      -- AUTOINCREMENT: a seq is never reused after pruning, so a consumer's cursor stays valid.
      CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        email_id TEXT NOT NULL,
        type TEXT NOT NULL,
        recipient TEXT NOT NULL DEFAULT '',
        at_ms INTEGER NOT NULL,
        mx TEXT NOT NULL DEFAULT '',
        response TEXT NOT NULL DEFAULT '',
        attempt INTEGER NOT NULL DEFAULT 0,
        enhanced_code TEXT NOT NULL DEFAULT '',
        next_attempt_ms INTEGER NOT NULL DEFAULT 0
      );
      CREATE TABLE enqueued (
        email_id TEXT PRIMARY KEY,
        state TEXT NOT NULL CHECK (state IN ('pending', 'queued')),
        updated_ms INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX enqueued_by_state ON enqueued (state, updated_ms);
    `,
  },
  {
    id: '0002_pacing',
    sql: `
      ALTER TABLE events ADD COLUMN cause TEXT NOT NULL DEFAULT '';
      ALTER TABLE events ADD COLUMN provider TEXT NOT NULL DEFAULT '';
      ALTER TABLE events ADD COLUMN token TEXT NOT NULL DEFAULT '';
      ALTER TABLE events ADD COLUMN source TEXT NOT NULL DEFAULT '';
      CREATE TABLE usage (
        day TEXT NOT NULL,
        project_id TEXT NOT NULL,
        provider TEXT NOT NULL,
        transactional INTEGER NOT NULL DEFAULT 0,
        bulk INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (day, project_id, provider)
      ) WITHOUT ROWID;
      -- The last throttles control pushed: a restarted gateway paces by them until control pushes again.
      CREATE TABLE settings (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL
      ) WITHOUT ROWID;
    `,
  },
  {
    id: '0003_finished',
    sql: `
      -- Haraka queue files whose outcome is recorded (delivered, or bounced for good), written in
      -- the events' transaction: Haraka removes the file right after, and a file still there at
      -- start (a crash in between) is removed instead of being delivered again.
      CREATE TABLE finished (
        file TEXT PRIMARY KEY,
        at_ms INTEGER NOT NULL
      ) WITHOUT ROWID;
    `,
  },
  {
    id: '0004_rule',
    sql: `
      -- The shaping rule or operator's suspension that held the mail (cause shaping / suspended).
      ALTER TABLE events ADD COLUMN rule TEXT NOT NULL DEFAULT '';
    `,
  },
  {
    id: '0005_inbound',
    sql: `
      -- Mail received for a receiving domain, written with its 'received' event before the 250: a
      -- table apart, so paging through events never reads messages (the stream reads each as it sends it).
      CREATE TABLE inbound_mail (
        seq INTEGER PRIMARY KEY,
        mail BLOB NOT NULL
      );
    `,
  },
  {
    id: '0006_tls',
    sql: `
      -- The attempt's TLS (used, version, verified, what required it) as JSON; '' when nothing is known.
      ALTER TABLE events ADD COLUMN tls TEXT NOT NULL DEFAULT '';
    `,
  },
];

interface EventRecord {
  seq: number;
  email_id: string;
  type: OutboxEventType;
  recipient: string;
  at_ms: number;
  mx: string;
  response: string;
  attempt: number;
  enhanced_code: string;
  next_attempt_ms: number;
  cause: string;
  rule: string;
  provider: string;
  token: string;
  source: string;
  tls: string;
}

const fromRecord = (r: EventRecord): DeliveryEventRow => ({
  seq: r.seq,
  emailId: r.email_id,
  type: r.type,
  recipient: r.recipient,
  atMs: r.at_ms,
  mx: r.mx,
  response: r.response,
  attempt: r.attempt,
  enhancedCode: r.enhanced_code,
  nextAttemptMs: r.next_attempt_ms,
  cause: r.cause,
  rule: r.rule,
  provider: r.provider,
  token: r.token,
  source: r.source,
  tls: r.tls,
});

function prepare(db: Db) {
  return {
    insertEvent: db.prepare(
      `INSERT INTO events (email_id, type, recipient, at_ms, mx, response, attempt, enhanced_code, next_attempt_ms, cause, rule, provider, token, source, tls)
       VALUES (@emailId, @type, @recipient, @atMs, @mx, @response, @attempt, @enhancedCode, @nextAttemptMs, @cause, @rule, @provider, @token, @source, @tls)`,
    ),
    addUsage: db.prepare(
      `INSERT INTO usage (day, project_id, provider, transactional, bulk) VALUES (@day, @projectId, @provider, @transactional, @bulk)
       ON CONFLICT (day, project_id, provider) DO UPDATE SET transactional = transactional + excluded.transactional, bulk = bulk + excluded.bulk`,
    ),
    usageOfDay: db.prepare('SELECT day, project_id, provider, transactional, bulk FROM usage WHERE day = ?'),
    pruneUsage: db.prepare('DELETE FROM usage WHERE day < ?'),
    getSetting: db.prepare('SELECT value FROM settings WHERE name = ?').pluck(),
    putSetting: db.prepare('INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value'),
    eventsAfter: db.prepare('SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?'),
    prune: db.prepare('DELETE FROM events WHERE seq <= ?'),
    insertInbound: db.prepare('INSERT INTO inbound_mail (seq, mail) VALUES (?, ?)'),
    inboundOf: db.prepare('SELECT mail FROM inbound_mail WHERE seq = ?').pluck(),
    pruneInbound: db.prepare('DELETE FROM inbound_mail WHERE seq <= ?'),
    countEvents: db.prepare('SELECT count(*) FROM events').pluck(),
    // sqlite_sequence keeps the highest seq ever issued, even once every event is pruned.
    lastSeq: db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'events'").pluck(),
    state: db.prepare('SELECT state FROM enqueued WHERE email_id = ?').pluck(),
    insertPending: db.prepare("INSERT INTO enqueued (email_id, state, updated_ms) VALUES (?, 'pending', ?)"),
    setQueued: db.prepare("UPDATE enqueued SET state = 'queued', updated_ms = ? WHERE email_id = ? AND state = 'pending'"),
    forget: db.prepare('DELETE FROM enqueued WHERE email_id = ?'),
    pendingIds: db.prepare("SELECT email_id FROM enqueued WHERE state = 'pending'").pluck(),
    pruneQueued: db.prepare("DELETE FROM enqueued WHERE state = 'queued' AND updated_ms < ?"),
    insertFinished: db.prepare('INSERT OR IGNORE INTO finished (file, at_ms) VALUES (?, ?)'),
    finishedFiles: db.prepare('SELECT file FROM finished').pluck(),
    forgetFinished: db.prepare('DELETE FROM finished WHERE file = ?'),
    pruneFinished: db.prepare('DELETE FROM finished WHERE at_ms < ?'),
  };
}

export class Outbox {
  private readonly writer: GroupWriter;
  private readonly stmt: ReturnType<typeof prepare>;

  private constructor(
    private readonly db: Db,
    maxBatch: number,
    durable: boolean,
  ) {
    this.writer = new GroupWriter(db, maxBatch, durable);
    this.stmt = prepare(db);
  }

  static open(file: string, opts: OutboxOptions = {}): Outbox {
    const db = openDatabase(file, migrations, { externalCheckpoints: opts.externalCheckpoints });
    return new Outbox(db, opts.maxBatch ?? 1000, (opts.synchronous ?? 'FULL') === 'FULL');
  }

  /**
   * Appends events durably (the promise settles after the commit) and returns them
   * with their seq. An email that has events was certainly queued by Haraka, so a
   * 'pending' enqueue row flips to 'queued' in the same transaction: after that,
   * even pruned events cannot make a crash recovery forget it.
   * `finished`: queue files these events close for good, recorded in the same transaction.
   * `now`: committed before this returns (with whatever else is queued), not at the end of this turn of
   * the event loop: a remote server's 250 reaches the database file before anything else runs, so a kill -9
   * cannot lose it from then on; the promise still settles once the commit is fsynced (a power loss).
   */
  appendEvents(events: readonly NewDeliveryEvent[], finished: readonly string[] = [], now = false): Promise<DeliveryEventRow[]> {
    if (!events.length && !finished.length) return Promise.resolve([]);
    const written = this.writer.run(() => {
      const at = Date.now();
      const rows: DeliveryEventRow[] = [];
      const ids = new Set<string>();
      for (const e of events) {
        const row: Required<Omit<NewDeliveryEvent, 'inbound'>> = {
          emailId: e.emailId,
          type: e.type,
          recipient: e.recipient,
          atMs: e.atMs,
          mx: e.mx,
          response: e.response,
          attempt: e.attempt,
          enhancedCode: e.enhancedCode,
          nextAttemptMs: e.nextAttemptMs,
          cause: e.cause ?? '',
          rule: e.rule ?? '',
          provider: e.provider ?? '',
          token: e.token ?? '',
          source: e.source ?? '',
          tls: e.tls ?? '',
        };
        const { lastInsertRowid } = this.stmt.insertEvent.run(row);
        rows.push({ ...row, seq: Number(lastInsertRowid) });
        if (e.inbound) this.stmt.insertInbound.run(lastInsertRowid, e.inbound);
        else ids.add(e.emailId);
      }
      for (const id of ids) this.stmt.setQueued.run(at, id);
      for (const file of finished) this.stmt.insertFinished.run(file, at);
      return rows;
    });
    if (now) this.writer.flush();
    return written;
  }

  async appendEvent(event: NewDeliveryEvent): Promise<DeliveryEventRow> {
    const [row] = await this.appendEvents([event]);
    return row!;
  }

  async eventsAfter(seq: number, limit: number): Promise<DeliveryEventRow[]> {
    return (this.stmt.eventsAfter.all(seq, limit) as EventRecord[]).map(fromRecord);
  }

  /** Drops events up to seq (control has recorded them). Returns how many went. */
  prune(uptoSeq: number): Promise<number> {
    return this.writer.run(() => {
      this.stmt.pruneInbound.run(uptoSeq);
      return this.stmt.prune.run(uptoSeq).changes;
    });
  }

  /** The received message of a 'received' event (InboundMail bytes); undefined once pruned. */
  inboundOf(seq: number): Uint8Array | undefined {
    return (this.stmt.inboundOf.get(seq) as Buffer | undefined) ?? undefined;
  }

  async lastSeq(): Promise<number> {
    return Number(this.stmt.lastSeq.get() ?? 0);
  }

  async countEvents(): Promise<number> {
    return Number(this.stmt.countEvents.get());
  }

  async getEnqueueState(emailId: string): Promise<EnqueueState | undefined> {
    return this.stmt.state.get(emailId) as EnqueueState | undefined;
  }

  /**
   * Records that an Enqueue of this id starts, unless the id is known.
   * Returns the state found before: undefined means the caller now owns a 'pending' row.
   */
  beginEnqueue(emailId: string): Promise<EnqueueState | undefined> {
    return this.writer.run(() => {
      const state = this.stmt.state.get(emailId) as EnqueueState | undefined;
      if (state === undefined) this.stmt.insertPending.run(emailId, Date.now());
      return state;
    });
  }

  /** Haraka has the messages on disk: later Enqueues of these ids are duplicates. */
  markEnqueued(emailIds: readonly string[]): Promise<void> {
    return this.writer.run(() => {
      const now = Date.now();
      for (const id of emailIds) this.stmt.setQueued.run(now, id);
    });
  }

  /** Forgets ids that Haraka never queued, so a retried Enqueue sends them. */
  forgetEnqueued(emailIds: readonly string[]): Promise<void> {
    return this.writer.run(() => {
      for (const id of emailIds) this.stmt.forget.run(id);
    });
  }

  async pendingEnqueues(): Promise<string[]> {
    return this.stmt.pendingIds.all() as string[];
  }

  /** Forgets queued ids older than the idempotency window. */
  pruneEnqueued(olderThanMs: number): Promise<number> {
    return this.writer.run(() => this.stmt.pruneQueued.run(olderThanMs).changes);
  }

  /** Queue files recorded as finished (appendEvents) that Haraka may not have removed yet. */
  async finishedFiles(): Promise<string[]> {
    return this.stmt.finishedFiles.all() as string[];
  }

  forgetFinished(files: readonly string[]): Promise<void> {
    return this.writer.run(() => {
      for (const f of files) this.stmt.forgetFinished.run(f);
    });
  }

  /** Forgets finished files recorded before `olderThanMs`: Haraka removed them long ago. */
  pruneFinished(olderThanMs: number): Promise<number> {
    return this.writer.run(() => this.stmt.pruneFinished.run(olderThanMs).changes);
  }

  /** Adds to the warm-up counters (in the same group commit as the events of that moment). */
  addUsage(rows: readonly UsageRow[]): Promise<void> {
    if (!rows.length) return Promise.resolve();
    return this.writer.run(() => {
      for (const r of rows) this.stmt.addUsage.run(r);
    });
  }

  async usageOfDay(day: string): Promise<UsageRow[]> {
    return (this.stmt.usageOfDay.all(day) as Array<{ day: string; project_id: string; provider: string; transactional: number; bulk: number }>).map((r) => ({
      day: r.day,
      projectId: r.project_id,
      provider: r.provider,
      transactional: r.transactional,
      bulk: r.bulk,
    }));
  }

  /** Forgets counters of days before `day` (YYYY-MM-DD). */
  pruneUsage(beforeDay: string): Promise<number> {
    return this.writer.run(() => this.stmt.pruneUsage.run(beforeDay).changes);
  }

  async setting(name: string): Promise<string | undefined> {
    return this.stmt.getSetting.get(name) as string | undefined;
  }

  putSetting(name: string, value: string): Promise<void> {
    return this.writer.run(() => void this.stmt.putSetting.run(name, value));
  }

  /** Commits what is queued, then closes the database. */
  close(): void {
    this.writer.close();
    this.db.close();
  }
}
