// Acceptance, release and cancel on PostgreSQL. Emails accepted on this node in the same
// turn of the event loop share one transaction (one commit, a few statements whatever
// their number), like SQLite's group commit. The transaction first locks the counter rows
// it judges by (this month's and today's usage, today's bulk volume and subject counts)
// with an upsert that returns them: another node's acceptance for the same project waits
// on those rows until this one commits, so quotas and the subject limit hold across nodes
// exactly. The lifecycle (control/mail/lifecycle.ts) judges each email in order against
// the locked counts; what it decides is written together (changes.ts).
import { StoreUnavailableError } from '../../../core/errors.js';
import {
  accept,
  addChanges,
  cancel,
  type LoadedCounts,
  type LoadedEmail,
  noChanges,
  release,
  releasing,
  type Screened,
  screen,
  suppressionLookups,
} from '../../mail/lifecycle.js';
import type { SuppressionScope } from '../../mail/vocabulary.js';
import type { Acceptance, AcceptGuards, NewEmail, ScheduleChange } from '../index.js';
import { withRecipients } from './rows.js';
import type { PgDb, Tx } from './db.js';
import { hooksOf, type WebhookCache, writeChanges } from './changes.js';

interface Job {
  e: NewEmail;
  guards: AcceptGuards;
  resolve: (a: Acceptance) => void;
  reject: (err: unknown) => void;
}

/** Locks the counter rows named by `keys` (creating them at 0) and returns their counts, in key order. */
async function lockCounts(tx: Tx, table: string, columns: string[], keys: string[][]): Promise<Map<string, number>> {
  const unique = [...new Map(keys.map((k) => [k.join('|'), k])).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const out = new Map<string, number>();
  if (!unique.length) return out;
  const cols = columns.join(', ');
  const r = await tx.query<Record<string, string> & { count: number }>(
    `INSERT INTO ${table} (${cols}, count) SELECT *, 0 FROM unnest(${columns.map((_, i) => `$${i + 1}::text[]`).join(', ')})
     ON CONFLICT (${cols}) DO UPDATE SET count = ${table}.count RETURNING ${cols}, count`,
    columns.map((_, i) => unique.map(([, k]) => k[i]!)),
  );
  for (const row of r.rows) out.set(columns.map((c) => row[c]).join('|'), row.count);
  return out;
}

/**
 * The counts the quota and bulk rules read for a group of screened emails, locked (usage this month
 * and today, bulk today and per subject) or only read (the previous days, today's allowance: nothing
 * a group does changes them). `of` gives an email's counts as the group's earlier emails left them;
 * `add` moves them by what an accepted email counted.
 */
async function loadCounts(tx: Tx, list: Screened[]) {
  const quota = list.filter((s) => s.quota);
  const bulk = list.filter((s) => s.bulk);
  const p = (s: Screened) => s.email.projectId;
  // Locked in one order on every node: months, days, bulk days, bulk subjects, each sorted.
  const month = await lockCounts(
    tx,
    'usage_monthly',
    ['project_id', 'month'],
    quota.map((s) => [p(s), s.day.slice(0, 7)]),
  );
  const day = await lockCounts(
    tx,
    'usage_daily',
    ['project_id', 'day'],
    quota.map((s) => [p(s), s.day]),
  );
  const bulkDay = await lockCounts(
    tx,
    'bulk_daily',
    ['project_id', 'day'],
    bulk.map((s) => [p(s), s.day]),
  );
  const subject = await lockCounts(
    tx,
    'bulk_subject_daily',
    ['project_id', 'day', 'subject_hash'],
    bulk.map((s) => [p(s), s.day, s.bulk!.subjectHash]),
  );
  const history = new Map<string, { previousDays: number; allowance: number }>();
  for (const s of bulk) {
    const k = `${p(s)}|${s.day}|${s.bulk!.since}`;
    if (history.has(k)) continue;
    const [sum, allowed] = await Promise.all([
      tx.query<{ n: number }>('SELECT COALESCE(SUM(count), 0) AS n FROM bulk_daily WHERE project_id = $1 AND day >= $2 AND day < $3', [
        p(s),
        s.bulk!.since,
        s.day,
      ]),
      tx.query<{ n: number }>('SELECT COALESCE(MAX(volume), 0) AS n FROM volume_allowances WHERE project_id = $1 AND day = $2', [p(s), s.day]),
    ]);
    history.set(k, { previousDays: sum.rows[0]!.n, allowance: allowed.rows[0]!.n });
  }
  const dayKey = (s: Screened) => `${p(s)}|${s.day}`;
  const monthKey = (s: Screened) => `${p(s)}|${s.day.slice(0, 7)}`;
  const subjectKey = (s: Screened) => `${dayKey(s)}|${s.bulk!.subjectHash}`;
  return {
    of(s: Screened): LoadedCounts {
      const counts: LoadedCounts = {};
      if (s.quota) counts.usage = { day: day.get(dayKey(s))!, month: month.get(monthKey(s))! };
      if (s.bulk)
        counts.bulk = {
          sameSubjectToday: subject.get(subjectKey(s))!,
          today: bulkDay.get(dayKey(s))!,
          ...history.get(`${dayKey(s)}|${s.bulk.since}`)!,
        };
      return counts;
    },
    add(s: Screened, changes: ReturnType<typeof noChanges>): void {
      if (changes.usage.length) {
        day.set(dayKey(s), day.get(dayKey(s))! + 1);
        month.set(monthKey(s), month.get(monthKey(s))! + 1);
      }
      for (const b of changes.bulk) {
        subject.set(subjectKey(s), subject.get(subjectKey(s))! + b.recipients);
        bulkDay.set(dayKey(s), bulkDay.get(dayKey(s))! + b.recipients);
      }
    },
  };
}

/** An email row (every column) locked by the caller, as the lifecycle takes it, with its recipients. */
async function loaded(tx: Tx, r: unknown): Promise<LoadedEmail | undefined> {
  return r ? (await withRecipients(tx, [r as { id: string }]))[0] : undefined;
}

export class Acceptor {
  private queue: Job[] = [];
  private scheduled = false;
  private running = false;
  private idle: Array<() => void> = [];

  constructor(
    private readonly db: PgDb,
    private readonly hooks: WebhookCache,
    private readonly maxBatch: number,
  ) {}

  /** Queues the emails for the next group; each promise settles on its own once the group commits. */
  submit(list: NewEmail[], guards: AcceptGuards): Array<Promise<Acceptance>> {
    const out = list.map((e) => new Promise<Acceptance>((resolve, reject) => this.queue.push({ e, guards, resolve, reject })));
    if (!this.scheduled && !this.running) {
      this.scheduled = true;
      setImmediate(() => void this.flush());
    }
    return out;
  }

  /** Resolves once no group is running or queued (closing the store). */
  drained(): Promise<void> {
    if (!this.running && !this.queue.length) return Promise.resolve();
    return new Promise((r) => this.idle.push(r));
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    this.running = true;
    while (this.queue.length) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        const results = await this.db.tx((tx) => this.group(tx, batch), batch.length);
        for (const [i, job] of batch.entries()) job.resolve(results[i]!);
      } catch (err) {
        if (batch.length === 1 || err instanceof StoreUnavailableError) {
          for (const job of batch) job.reject(err);
          continue;
        }
        // One email the database refuses (a duplicate id, an unknown project) must not fail the
        // others: each goes again on its own, and only the bad one fails.
        for (const job of batch) {
          try {
            job.resolve((await this.db.tx((tx) => this.group(tx, [job])))[0]!);
          } catch (e) {
            job.reject(e);
          }
        }
      }
    }
    this.running = false;
    for (const r of this.idle.splice(0)) r();
  }

  /**
   * A due scheduled email leaves now: locked, judged by the same rules as a new email
   * (today's counts), then queued (maybe held) or failed with the refusal.
   */
  async release(id: string, guards: AcceptGuards, now: number): Promise<Acceptance | { kind: 'gone' }> {
    return this.db.tx(async (tx) => {
      const email = await loaded(tx, (await tx.query('SELECT * FROM emails WHERE id = $1 FOR UPDATE', [id])).rows[0]);
      const s = releasing(email, guards, now);
      if (!email || !s) return { kind: 'gone' as const };
      const counts = await loadCounts(tx, [s]);
      const hooks = await hooksOf(tx, this.hooks, [email.projectId]);
      const { outcome, changes } = release(email, s, counts.of(s), hooks.get(email.projectId)!, now);
      await writeChanges(tx, changes);
      return outcome;
    });
  }

  /** A scheduled email will not leave: canceled, with its recipients. */
  async cancel(projectId: string, id: string, now: number): Promise<ScheduleChange> {
    return this.db.tx(async (tx) => {
      const email = await loaded(tx, (await tx.query('SELECT * FROM emails WHERE id = $1 AND project_id = $2 FOR UPDATE', [id, projectId])).rows[0]);
      const hooks = await hooksOf(tx, this.hooks, [projectId]);
      const { outcome, changes } = cancel(email, hooks.get(projectId)!, now);
      await writeChanges(tx, changes);
      return outcome;
    });
  }

  /**
   * A group of new emails: the suppression list read once for all, each email judged in order against
   * the locked counts (as the group's earlier emails left them), then every change written together.
   */
  private async group(tx: Tx, jobs: Job[]): Promise<Acceptance[]> {
    const lookups = jobs.flatMap((j) => suppressionLookups(j.e, j.guards).map((address) => [j.e.projectId, address] as const));
    const scopes = new Map<string, SuppressionScope>();
    if (lookups.length) {
      const r = await tx.query<{ project_id: string; address: string; scope: SuppressionScope }>(
        `SELECT project_id, address, scope FROM suppressions
         WHERE (project_id, address) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
        [lookups.map((x) => x[0]), lookups.map((x) => x[1])],
      );
      for (const x of r.rows) scopes.set(`${x.project_id}|${x.address}`, x.scope);
    }
    const screened = jobs.map((j) => {
      const own = new Map<string, SuppressionScope>();
      for (const address of suppressionLookups(j.e, j.guards)) {
        const scope = scopes.get(`${j.e.projectId}|${address}`);
        if (scope) own.set(address, scope);
      }
      return screen(j.e, j.guards, own);
    });
    const counts = await loadCounts(tx, screened);
    const hooks = await hooksOf(
      tx,
      this.hooks,
      jobs.map((j) => j.e.projectId),
    );
    const all = noChanges();
    const outcomes: Acceptance[] = [];
    for (const s of screened) {
      const { outcome, changes } = accept(s, counts.of(s), hooks.get(s.email.projectId)!);
      counts.add(s, changes);
      addChanges(all, changes);
      outcomes.push(outcome);
    }
    await writeChanges(tx, all);
    return outcomes;
  }
}
