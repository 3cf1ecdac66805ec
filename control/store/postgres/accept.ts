// Acceptance on PostgreSQL. Emails accepted on this node in the same turn of the event
// loop share one transaction (one commit, a few statements whatever their number), like
// SQLite's group commit. The transaction first locks the counter rows it judges by
// (this month's and today's usage, today's bulk volume and subject counts) with an
// upsert that returns them: another node's acceptance for the same project waits on
// those rows until this one commits, so quotas and the subject limit hold across nodes
// exactly. The pure rules (control/mail/rules.ts) judge each email in order against
// the locked counts; the accepted ones are written, then the counts moved.
import { DAY_MS, dayOf } from '../../../core/clock.js';
import { StoreUnavailableError } from '../../../core/errors.js';
import { judgeBulk, judgeQuota, judgeSuppressions, refusalText, subjectHash } from '../../mail/rules.js';
import type { Acceptance, AcceptGuards, NewEmail } from '../index.js';
import { releasedEmail, toRecipient } from './rows.js';
import type { PgDb, Tx } from './db.js';
import { addCounts, Fanout, type WebhookCache } from './fanout.js';

interface Job {
  e: NewEmail;
  guards: AcceptGuards;
  /** Every recipient was suppressed: `e` is recorded as failed (set by suppress). */
  suppressed?: boolean;
  resolve: (a: Acceptance) => void;
  reject: (err: unknown) => void;
}

interface Judged {
  e: NewEmail;
  held?: string;
}

type Counts = Map<string, { key: string[]; n: number }>;

const add = (m: Counts, key: string[], n: number) => {
  const k = key.join('|');
  const c = m.get(k);
  if (c) c.n += n;
  else m.set(k, { key, n });
};

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

/** One email-level event (no recipient, attempt 0); a repeat with the same dedupe key is recorded once. */
export function emailEvent(tx: Tx, id: string, type: string, at: number, details: unknown = null, dedupe = ''): Promise<unknown> {
  return tx.query(
    "INSERT INTO email_events (email_id, type, recipient, attempt, at, details, dedupe) VALUES ($1, $2, '', 0, $3, $4, $5) ON CONFLICT DO NOTHING",
    [id, type, at, details === null ? null : JSON.stringify(details), dedupe],
  );
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
      const r = (await tx.query("SELECT * FROM emails WHERE id = $1 AND status = 'scheduled' FOR UPDATE", [id])).rows[0];
      if (!r) return { kind: 'gone' as const };
      const recipients = (
        await tx.query('SELECT address, kind, status, updated_at FROM email_recipients WHERE email_id = $1 ORDER BY position', [id])
      ).rows.map(toRecipient);
      const e = releasedEmail(r, recipients, now);
      const job: Job = { e, guards, resolve: () => {}, reject: () => {} };
      const fanout = new Fanout(tx, this.hooks);
      const email = { id, projectId: e.projectId, from: e.from, subject: e.subject, createdAt: Number(r.created_at), request: e.request };
      const [outcome] = await this.group(tx, [job], async (_tx, accepted) => {
        const held = accepted[0]?.held ?? null;
        const reached = await fanout.reach(email, r.reached, 'queued', now, { type: 'queued', at: now });
        await tx.query("UPDATE emails SET status = 'queued', updated_at = $2, reached = $3, held = $4 WHERE id = $1", [id, now, reached, held]);
        await emailEvent(tx, id, 'queued', now);
        if (held) {
          const details = { cause: 'volume', reason: held };
          await emailEvent(tx, id, 'deferred', now, details, 'volume');
          await fanout.notify(email, 'queued', now, { type: 'deferred', at: now, ...details });
        }
      });
      if (outcome!.kind !== 'accepted') {
        const err = refusalText(outcome!);
        const details = { reason: err.message, code: err.code };
        const reached = await fanout.reach(email, r.reached, 'failed', now, { type: 'failed', at: now, ...details });
        await tx.query("UPDATE emails SET status = 'failed', error = $2, error_code = $3, updated_at = $4, reached = $5 WHERE id = $1", [
          id,
          err.message,
          err.code,
          now,
          reached,
        ]);
        await tx.query("UPDATE email_recipients SET status = 'failed', updated_at = $2 WHERE email_id = $1 AND status = 'queued'", [id, now]);
        await emailEvent(tx, id, 'failed', now, details);
      }
      await fanout.flush();
      return outcome!;
    });
  }

  /** A scheduled email will not leave: canceled, with its recipients. */
  async cancel(projectId: string, id: string, now: number): Promise<{ kind: 'done' } | { kind: 'not_found' } | { kind: 'not_scheduled'; status: string }> {
    return this.db.tx(async (tx) => {
      const r = (await tx.query('SELECT * FROM emails WHERE id = $1 AND project_id = $2 FOR UPDATE', [id, projectId])).rows[0];
      if (!r) return { kind: 'not_found' as const };
      if (r.status !== 'scheduled') return { kind: 'not_scheduled' as const, status: r.status as string };
      const fanout = new Fanout(tx, this.hooks);
      const email = { id, projectId, from: r.from_addr, subject: r.subject, createdAt: Number(r.created_at), request: r.request };
      const reached = await fanout.reach(email, r.reached, 'canceled', now, { type: 'canceled', at: now });
      await tx.query("UPDATE emails SET status = 'canceled', updated_at = $2, reached = $3 WHERE id = $1", [id, now, reached]);
      await tx.query("UPDATE email_recipients SET status = 'canceled', updated_at = $2 WHERE email_id = $1 AND status = 'queued'", [id, now]);
      await emailEvent(tx, id, 'canceled', now);
      await fanout.flush();
      return { kind: 'done' as const };
    });
  }

  /** The jobs as the projects' suppression lists leave them (those whose guards ask), from one query for the whole group. */
  private async suppress(tx: Tx, jobs: Job[]): Promise<Job[]> {
    const asked = jobs.filter((j) => j.guards.suppressions);
    if (!asked.length) return jobs;
    const pairs = asked.flatMap((j) => j.e.recipients.map((r) => [j.e.projectId, r.address] as const));
    const r = await tx.query<{ project_id: string; address: string; scope: string }>(
      `SELECT project_id, address, scope FROM suppressions
       WHERE (project_id, address) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
      [pairs.map((p) => p[0]), pairs.map((p) => p[1])],
    );
    const scopes = new Map(r.rows.map((x) => [`${x.project_id}|${x.address}`, x.scope]));
    return jobs.map((j) => {
      if (!j.guards.suppressions) return j;
      const judged = judgeSuppressions(j.e, (address) => scopes.get(`${j.e.projectId}|${address}`));
      return { ...j, e: judged.email, suppressed: judged.suppressed };
    });
  }

  private async group(tx: Tx, sent: Job[], write: (tx: Tx, accepted: Judged[]) => Promise<void> = (t, a) => this.record(t, a)): Promise<Acceptance[]> {
    const jobs = await this.suppress(tx, sent);
    const queued = (j: Job) => j.e.status === 'queued';
    const quotaJobs = jobs.filter((j) => j.guards.quota && queued(j));
    const bulkJobs = jobs.filter((j) => j.guards.bulk && j.e.bulk && queued(j));
    const dayOfJob = (j: Job) => dayOf(j.e.createdAt);

    // Locked in one order on every node: months, days, bulk days, bulk subjects, each sorted.
    const month = await lockCounts(
      tx,
      'usage_monthly',
      ['project_id', 'month'],
      quotaJobs.map((j) => [j.e.projectId, dayOfJob(j).slice(0, 7)]),
    );
    const day = await lockCounts(
      tx,
      'usage_daily',
      ['project_id', 'day'],
      quotaJobs.map((j) => [j.e.projectId, dayOfJob(j)]),
    );
    const bulkDay = await lockCounts(
      tx,
      'bulk_daily',
      ['project_id', 'day'],
      bulkJobs.map((j) => [j.e.projectId, dayOfJob(j)]),
    );
    const subject = await lockCounts(
      tx,
      'bulk_subject_daily',
      ['project_id', 'day', 'subject_hash'],
      bulkJobs.map((j) => [j.e.projectId, dayOfJob(j), subjectHash(j.e.subject)]),
    );
    // The previous days' volume and today's allowance are only read: nothing this group does changes them.
    const history = new Map<string, { average: number; allowance: number }>();
    for (const j of bulkJobs) {
      const days = j.guards.bulk!.spike.days;
      const today = dayOfJob(j);
      const k = `${j.e.projectId}|${today}|${days}`;
      if (history.has(k)) continue;
      const since = dayOf(j.e.createdAt - days * DAY_MS);
      const [sum, allowed] = await Promise.all([
        tx.query<{ n: number }>('SELECT COALESCE(SUM(count), 0) AS n FROM bulk_daily WHERE project_id = $1 AND day >= $2 AND day < $3', [
          j.e.projectId,
          since,
          today,
        ]),
        tx.query<{ n: number }>('SELECT COALESCE(MAX(volume), 0) AS n FROM volume_allowances WHERE project_id = $1 AND day = $2', [j.e.projectId, today]),
      ]);
      history.set(k, { average: sum.rows[0]!.n / days, allowance: allowed.rows[0]!.n });
    }

    const usageDelta: Counts = new Map();
    const monthDelta: Counts = new Map();
    const bulkDelta: Counts = new Map();
    const subjectDelta: Counts = new Map();
    const outcomes: Acceptance[] = [];
    const accepted: Judged[] = [];
    for (const j of jobs) {
      const { e, guards } = j;
      const today = dayOfJob(j);
      const monthKey = `${e.projectId}|${today.slice(0, 7)}`;
      const dayKey = `${e.projectId}|${today}`;
      const counted = guards.quota && queued(j);
      if (counted) {
        const refusal = judgeQuota({ day: day.get(dayKey)!, month: month.get(monthKey)! }, guards.quota!);
        if (refusal) {
          outcomes.push(refusal);
          continue;
        }
      }
      let bulk: { recipients: number; hash: string; held?: string } | undefined;
      if (guards.bulk && e.bulk && queued(j)) {
        const recipients = e.recipients.filter((r) => r.status !== 'failed').length;
        const hash = subjectHash(e.subject);
        const subjectKey = `${dayKey}|${hash}`;
        const h = history.get(`${dayKey}|${guards.bulk.spike.days}`)!;
        const verdict = judgeBulk(
          { recipients, sameSubjectToday: subject.get(subjectKey)!, today: bulkDay.get(dayKey)!, average: h.average, allowance: h.allowance },
          guards.bulk,
        );
        if ('refusal' in verdict) {
          outcomes.push(verdict.refusal);
          continue;
        }
        bulk = { recipients, hash, ...(verdict.held ? { held: verdict.held } : {}) };
        subject.set(subjectKey, subject.get(subjectKey)! + recipients);
        bulkDay.set(dayKey, bulkDay.get(dayKey)! + recipients);
        add(subjectDelta, [e.projectId, today, hash], recipients);
        add(bulkDelta, [e.projectId, today], recipients);
      }
      if (counted) {
        day.set(dayKey, day.get(dayKey)! + 1);
        month.set(monthKey, month.get(monthKey)! + 1);
        add(usageDelta, [e.projectId, today], 1);
        add(monthDelta, [e.projectId, today.slice(0, 7)], 1);
      }
      accepted.push(bulk?.held ? { e, held: bulk.held } : { e });
      outcomes.push(j.suppressed ? { kind: 'suppressed' } : bulk?.held ? { kind: 'accepted', held: bulk.held } : { kind: 'accepted' });
    }

    if (accepted.length) await write(tx, accepted);
    await addCounts(tx, 'usage_monthly', ['project_id', 'month'], monthDelta);
    await addCounts(tx, 'usage_daily', ['project_id', 'day'], usageDelta);
    await addCounts(tx, 'bulk_daily', ['project_id', 'day'], bulkDelta);
    await addCounts(tx, 'bulk_subject_daily', ['project_id', 'day', 'subject_hash'], subjectDelta);
    return outcomes;
  }

  /** Writes the accepted emails with their recipients, first events, status counts and webhook messages: a few statements for the whole group. */
  private async record(tx: Tx, list: Judged[]): Promise<void> {
    const fanout = new Fanout(tx, this.hooks);
    const em: unknown[][] = Array.from({ length: 15 }, () => []);
    const rc: unknown[][] = Array.from({ length: 6 }, () => []);
    const ev: unknown[][] = Array.from({ length: 7 }, () => []);
    const event = (id: string, type: string, recipient: string, at: number, details: unknown, dedupe = '') => {
      for (const [i, v] of [id, type, recipient, 0, at, details === null ? null : JSON.stringify(details), dedupe].entries()) ev[i]!.push(v);
    };
    for (const { e, held } of list) {
      for (const [i, v] of [
        e.id,
        e.projectId,
        e.status,
        e.from,
        e.subject,
        e.bulk,
        e.request,
        e.error ?? null,
        e.errorCode ?? null,
        e.createdAt,
        e.createdAt,
        e.status,
        e.system === true,
        held ?? null,
        e.scheduledAt ?? null,
      ].entries())
        em[i]!.push(v);
      // A recipient named twice is recorded once, so position n is the n-th recorded recipient.
      const seen = new Set<string>();
      for (const r of e.recipients) {
        if (seen.has(r.address)) continue;
        const status = r.status ?? (e.status === 'failed' ? 'failed' : 'queued');
        for (const [i, v] of [e.id, r.address, r.kind, status, e.createdAt, seen.size].entries()) rc[i]!.push(v);
        seen.add(r.address);
      }
      event(e.id, e.status, '', e.createdAt, e.error ? { reason: e.error, code: e.errorCode } : null);
      // A partly refused email says which recipients were left out, and why.
      for (const r of e.recipients)
        if (r.status === 'failed' && e.status !== 'failed') event(e.id, 'failed', r.address, e.createdAt, { reason: r.reason ?? 'refused' });
      fanout.count(e.projectId, dayOf(e.createdAt), e.status);
      const email = { id: e.id, projectId: e.projectId, from: e.from, subject: e.subject, createdAt: e.createdAt, request: e.request };
      await fanout.notify(email, e.status, e.createdAt, { type: e.status, at: e.createdAt, ...(e.error ? { reason: e.error, code: e.errorCode } : {}) });
      if (held) {
        // Held by control, not a gateway: the delay says so, and waits for an announcement or the operator.
        const details = { cause: 'volume', reason: held };
        event(e.id, 'deferred', '', e.createdAt, details, 'volume');
        await fanout.notify(email, e.status, e.createdAt, { type: 'deferred', at: e.createdAt, ...details });
      }
    }
    await tx.query(
      `INSERT INTO emails (id, project_id, status, from_addr, subject, bulk, request, error, error_code, created_at, updated_at, reached, system, held, scheduled_at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bool[], $7::text[], $8::text[], $9::text[],
         $10::bigint[], $11::bigint[], $12::text[], $13::bool[], $14::text[], $15::bigint[])`,
      em,
    );
    // One statement per file: a Buffer parameter travels in binary, where an array of them would be hex text.
    for (const { e } of list) {
      if (e.status === 'failed') continue; // a refused email is never sent: its files are not kept
      for (const [i, content] of (e.attachments ?? []).entries())
        await tx.query('INSERT INTO email_attachments (email_id, position, size, content) VALUES ($1, $2, $3, $4)', [e.id, i, content.length, content]);
    }
    await tx.query(
      `INSERT INTO email_recipients (email_id, address, kind, status, updated_at, position)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::int[])`,
      rc,
    );
    await tx.query(
      `INSERT INTO email_events (email_id, type, recipient, attempt, at, details, dedupe)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::bigint[], $6::jsonb[], $7::text[])
       ON CONFLICT DO NOTHING`,
      ev,
    );
    await fanout.flush();
  }
}
