// Emails in SQLite: acceptance (quota and bulk rules judged in the insert's own
// write, so concurrent sends never overshoot), reads, dispatch bookkeeping.
import { DAY_MS, dayOf } from '../../../core/clock.js';
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import { judgeBulk, judgeQuota, subjectHash, type BulkRules, type Refusal } from '../../mail/rules.js';
import type { Acceptance, AcceptGuards, EmailOwner, Emails, NewEmail, PendingEmail, StoredEmail } from '../index.js';
import type { DayTallies } from './tallies.js';
import type { StatusFanout, StatusRow } from './status-fanout.js';
import { RECIPIENTS_SQL, toEmail, toRecipient } from './rows.js';

export class SqliteEmails implements Emails {
  private readonly q;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
    private readonly tallies: DayTallies,
    private readonly fanout: StatusFanout,
  ) {
    this.q = {
      insert:
        db.prepare(`INSERT INTO emails (id, project_id, status, from_addr, subject, bulk, request, error, error_code, created_at, updated_at, reached, system)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      insertRecipient: db.prepare('INSERT OR IGNORE INTO email_recipients (email_id, address, kind, status, updated_at, position) VALUES (?, ?, ?, ?, ?, ?)'),
      insertEvent: db.prepare('INSERT OR IGNORE INTO email_events (email_id, type, recipient, attempt, at, details) VALUES (?, ?, ?, ?, ?, ?)'),
      insertEventKeyed: db.prepare('INSERT OR IGNORE INTO email_events (email_id, type, recipient, attempt, at, details, dedupe) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      setHeld: db.prepare('UPDATE emails SET held = ? WHERE id = ?'),
      email: db.prepare('SELECT * FROM emails WHERE id = ? AND project_id = ?'),
      recipients: db.prepare(RECIPIENTS_SQL),
      recipientAt: db.prepare('SELECT address FROM email_recipients WHERE email_id = ? AND position = ?').pluck(),
      events: db.prepare('SELECT type, recipient, attempt, at, details FROM email_events WHERE email_id = ? ORDER BY id'),
      undispatched: db.prepare("SELECT * FROM emails WHERE dispatched_at IS NULL AND status = 'queued' AND held IS NULL ORDER BY created_at LIMIT ?"),
      undispatchedOf: db.prepare(
        "SELECT * FROM emails WHERE dispatched_at IS NULL AND status = 'queued' AND held IS NULL AND project_id = ? ORDER BY created_at LIMIT ?",
      ),
      markDispatched: db.prepare('UPDATE emails SET dispatched_at = ? WHERE id = ?'),
      systemRequest: db.prepare('SELECT request FROM emails WHERE id = ? AND system = 1').pluck(),
      setRequest: db.prepare('UPDATE emails SET request = ? WHERE id = ?'),
      owner: db.prepare('SELECT e.id, e.project_id, e.bulk, p.name AS project_name FROM emails e JOIN projects p ON p.id = e.project_id WHERE e.id = ?'),
      bulkDay: db.prepare('SELECT count FROM bulk_daily WHERE project_id = ? AND day = ?').pluck(),
      bulkSince: db.prepare('SELECT COALESCE(SUM(count), 0) FROM bulk_daily WHERE project_id = ? AND day >= ? AND day < ?').pluck(),
      addBulk: db.prepare(
        'INSERT INTO bulk_daily (project_id, day, count) VALUES (?, ?, ?) ON CONFLICT(project_id, day) DO UPDATE SET count = count + excluded.count',
      ),
      subjectDay: db.prepare('SELECT count FROM bulk_subject_daily WHERE project_id = ? AND day = ? AND subject_hash = ?').pluck(),
      addSubject: db.prepare(`INSERT INTO bulk_subject_daily (project_id, day, subject_hash, count) VALUES (?, ?, ?, ?)
        ON CONFLICT(project_id, day, subject_hash) DO UPDATE SET count = count + excluded.count`),
      allowed: db.prepare('SELECT COALESCE(MAX(volume), 0) FROM volume_allowances WHERE project_id = ? AND day = ?').pluck(),
    };
  }

  accept(e: NewEmail, guards: AcceptGuards = {}): Promise<Acceptance> {
    return this.writer.run(() => this.acceptNow(e, guards));
  }

  /** Each in its own savepoint, one commit for all; each settles on its own. */
  acceptMany(list: NewEmail[], guards: AcceptGuards = {}): Array<Promise<Acceptance>> {
    return list.map((e) => this.writer.run(() => this.acceptNow(e, guards)));
  }

  private acceptNow(e: NewEmail, guards: AcceptGuards): Acceptance {
    const today = dayOf(e.createdAt);
    const queued = e.status === 'queued';
    // Judged before anything is written, so a refusal leaves nothing behind.
    if (guards.quota && queued) {
      const refusal = judgeQuota(this.tallies.usageOf(e.projectId, today), guards.quota);
      if (refusal) return refusal;
    }
    let bulk: { recipients: number; hash: string; held?: string } | undefined;
    if (guards.bulk && e.bulk && queued) {
      const judged = this.judgeBulk(e, today, guards.bulk);
      if ('kind' in judged) return judged;
      bulk = judged;
    }
    if (guards.quota && queued) this.tallies.countUsage(e.projectId, today);
    if (bulk) {
      this.q.addSubject.run(e.projectId, today, bulk.hash, bulk.recipients);
      this.q.addBulk.run(e.projectId, today, bulk.recipients);
    }
    this.record(e, bulk?.held);
    return bulk?.held ? { kind: 'accepted', held: bulk.held } : { kind: 'accepted' };
  }

  private judgeBulk(e: NewEmail, today: string, rules: BulkRules): Refusal | { recipients: number; hash: string; held?: string } {
    const recipients = e.recipients.filter((r) => r.status !== 'failed').length;
    const hash = subjectHash(e.subject);
    const verdict = judgeBulk(
      {
        recipients,
        sameSubjectToday: (this.q.subjectDay.get(e.projectId, today, hash) as number | undefined) ?? 0,
        today: (this.q.bulkDay.get(e.projectId, today) as number | undefined) ?? 0,
        average: (this.q.bulkSince.get(e.projectId, dayOf(e.createdAt - rules.spike.days * DAY_MS), today) as number) / rules.spike.days,
        allowance: this.q.allowed.get(e.projectId, today) as number,
      },
      rules,
    );
    if ('refusal' in verdict) return verdict.refusal;
    return verdict.held ? { recipients, hash, held: verdict.held } : { recipients, hash };
  }

  private record(e: NewEmail, held: string | undefined): void {
    // A new email has reached its first status already: no read-back for the fanout.
    const row: StatusRow = { reached: e.status, from_addr: e.from, subject: e.subject, request: e.request, created_at: e.createdAt };
    this.q.insert.run(
      e.id,
      e.projectId,
      e.status,
      e.from,
      e.subject,
      e.bulk ? 1 : 0,
      e.request,
      e.error ?? null,
      e.errorCode ?? null,
      e.createdAt,
      e.createdAt,
      e.status,
      e.system ? 1 : 0,
    );
    this.tallies.countStatus(e.projectId, dayOf(e.createdAt), e.status);

    // Positions count the recipients actually recorded, so position n is the n-th in recipient order.
    let position = 0;
    for (const r of e.recipients) {
      const status = r.status ?? (e.status === 'failed' ? 'failed' : 'queued');
      if (this.q.insertRecipient.run(e.id, r.address, r.kind, status, e.createdAt, position).changes) position++;
    }
    const details = e.error ? JSON.stringify({ reason: e.error, code: e.errorCode }) : null;
    this.q.insertEvent.run(e.id, e.status, '', 0, e.createdAt, details);
    for (const r of e.recipients) {
      // A partly refused email says which recipients were left out, and why.
      if (r.status === 'failed' && e.status !== 'failed')
        this.q.insertEvent.run(e.id, 'failed', r.address, 0, e.createdAt, JSON.stringify({ reason: r.reason ?? 'refused' }));
    }
    this.fanout.notify(
      e.id,
      e.projectId,
      e.status,
      e.createdAt,
      { type: e.status, at: e.createdAt, ...(e.error ? { reason: e.error, code: e.errorCode } : {}) },
      row,
    );
    if (held) {
      // Held by control, not a gateway: the delay says so, and waits for an announcement or the operator.
      const details = { cause: 'volume', reason: held };
      this.q.setHeld.run(held, e.id);
      this.q.insertEventKeyed.run(e.id, 'deferred', '', 0, e.createdAt, JSON.stringify(details), 'volume');
      this.fanout.notify(e.id, e.projectId, e.status, e.createdAt, { type: 'deferred', at: e.createdAt, ...details }, row);
    }
  }

  async get(projectId: string, id: string): Promise<StoredEmail | undefined> {
    const r = this.q.email.get(id, projectId);
    if (!r) return undefined;
    return {
      email: toEmail(r),
      recipients: this.q.recipients.all(id).map(toRecipient),
      events: this.q.events
        .all(id)
        .map((x: any) => ({ type: x.type, recipient: x.recipient, attempt: x.attempt, at: x.at, details: x.details ? JSON.parse(x.details) : null })),
    };
  }

  async undispatched(limit: number, projectId?: string): Promise<PendingEmail[]> {
    const rows = projectId ? this.q.undispatchedOf.all(projectId, limit) : this.q.undispatched.all(limit);
    return rows.map((r: any) => ({ ...toEmail(r), recipients: this.q.recipients.all(r.id).map(toRecipient) }));
  }

  markDispatched(ids: string[], at: number): Promise<void> {
    return this.writer.run(() => {
      for (const id of ids) {
        this.q.markDispatched.run(at, id);
        // The platform's own mail (sign-in codes) keeps no body once the gateway holds it: the code lives only as a keyed hash.
        const request = this.q.systemRequest.get(id) as string | undefined;
        if (request !== undefined) {
          const { text: _text, html: _html, ...rest } = JSON.parse(request) as Record<string, unknown>;
          this.q.setRequest.run(JSON.stringify(rest), id);
        }
      }
    });
  }

  async owner(emailId: string): Promise<EmailOwner | undefined> {
    const r = this.q.owner.get(emailId) as any;
    return r ? { id: r.id, projectId: r.project_id, projectName: r.project_name, bulk: !!r.bulk } : undefined;
  }

  async recipientAt(emailId: string, index: number): Promise<string | undefined> {
    return this.q.recipientAt.get(emailId, index) as string | undefined;
  }
}
