// Emails in SQLite: acceptance (quota and bulk rules judged in the insert's own
// write, so concurrent sends never overshoot), reads, dispatch bookkeeping.
import { DAY_MS, dayOf } from '../../../core/clock.js';
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import { judgeBulk, judgeQuota, judgeSuppressions, refusalText, subjectHash, type BulkRules, type Refusal } from '../../mail/rules.js';
import type { Acceptance, AcceptGuards, EmailOwner, EmailQuery, EmailRow, Emails, NewEmail, PendingEmail, ScheduleChange, StoredEmail } from '../index.js';
import { pageOf } from '../page.js';
import type { DayTallies } from './tallies.js';
import type { StatusFanout, StatusRow } from './status-fanout.js';
import { EMAIL_COLUMNS, RECIPIENTS_SQL, releasedEmail, toEmail, toRecipient } from './rows.js';

export class SqliteEmails implements Emails {
  private readonly q;

  constructor(
    private readonly db: Db,
    private readonly writer: GroupWriter,
    private readonly tallies: DayTallies,
    private readonly fanout: StatusFanout,
  ) {
    this.q = {
      insert:
        db.prepare(`INSERT INTO emails (id, project_id, status, from_addr, subject, bulk, error, error_code, created_at, updated_at, reached, system, scheduled_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      insertRequest: db.prepare('INSERT INTO email_requests (email_id, request) VALUES (?, ?)'),
      insertRecipient: db.prepare('INSERT OR IGNORE INTO email_recipients (email_id, address, kind, status, updated_at, position) VALUES (?, ?, ?, ?, ?, ?)'),
      insertAttachment: db.prepare('INSERT INTO email_attachments (email_id, position, size, content) VALUES (?, ?, ?, ?)'),
      attachments: db.prepare('SELECT content FROM email_attachments WHERE email_id = ? ORDER BY position').pluck(),
      insertEvent: db.prepare('INSERT OR IGNORE INTO email_events (email_id, type, recipient, attempt, at, details) VALUES (?, ?, ?, ?, ?, ?)'),
      insertEventKeyed: db.prepare('INSERT OR IGNORE INTO email_events (email_id, type, recipient, attempt, at, details, dedupe) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      setHeld: db.prepare('UPDATE emails SET held = ? WHERE id = ?'),
      email: db.prepare(`SELECT ${EMAIL_COLUMNS} FROM emails WHERE id = ? AND project_id = ?`),
      byId: db.prepare(`SELECT ${EMAIL_COLUMNS} FROM emails WHERE id = ?`),
      due: db.prepare("SELECT id, project_id FROM emails WHERE status = 'scheduled' AND scheduled_at <= ? ORDER BY scheduled_at LIMIT ?"),
      setStatus: db.prepare('UPDATE emails SET status = ?, error = ?, error_code = ?, updated_at = ? WHERE id = ?'),
      setRecipients: db.prepare("UPDATE email_recipients SET status = ?, updated_at = ? WHERE email_id = ? AND status = 'queued'"),
      setScheduled: db.prepare('UPDATE emails SET scheduled_at = ?, updated_at = ? WHERE id = ?'),
      recipients: db.prepare(RECIPIENTS_SQL),
      recipientAt: db.prepare('SELECT address FROM email_recipients WHERE email_id = ? AND position = ?').pluck(),
      events: db.prepare('SELECT type, recipient, attempt, at, details FROM email_events WHERE email_id = ? ORDER BY id'),
      undispatched: db.prepare(
        `SELECT ${EMAIL_COLUMNS} FROM emails WHERE dispatched_at IS NULL AND status = 'queued' AND held IS NULL ORDER BY created_at LIMIT ?`,
      ),
      undispatchedOf: db.prepare(
        `SELECT ${EMAIL_COLUMNS} FROM emails WHERE dispatched_at IS NULL AND status = 'queued' AND held IS NULL AND project_id = ? ORDER BY created_at LIMIT ?`,
      ),
      markDispatched: db.prepare('UPDATE emails SET dispatched_at = ? WHERE id = ?'),
      systemRequest: db.prepare('SELECT r.request FROM email_requests r JOIN emails e ON e.id = r.email_id WHERE r.email_id = ? AND e.system = 1').pluck(),
      setRequest: db.prepare('UPDATE email_requests SET request = ? WHERE email_id = ?'),
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
      suppression: db.prepare('SELECT scope FROM suppressions WHERE project_id = ? AND address = ?').pluck(),
    };
  }

  accept(e: NewEmail, guards: AcceptGuards = {}): Promise<Acceptance> {
    return this.writer.run(() => this.acceptNow(e, guards));
  }

  /** Each in its own savepoint, one commit for all; each settles on its own. */
  acceptMany(list: NewEmail[], guards: AcceptGuards = {}): Array<Promise<Acceptance>> {
    return list.map((e) => this.writer.run(() => this.acceptNow(e, guards)));
  }

  private acceptNow(sent: NewEmail, guards: AcceptGuards): Acceptance {
    // Read inside the group's write transaction: outside one, each lookup would begin and end a
    // read transaction of its own (file locks), which cost several times the lookup.
    const { email: e, suppressed } = guards.suppressions
      ? judgeSuppressions(sent, (address) => this.q.suppression.get(sent.projectId, address) as string | undefined)
      : { email: sent, suppressed: false };
    const admitted = this.admit(e, guards, dayOf(e.createdAt));
    if ('kind' in admitted) return admitted;
    this.record(e, admitted.held);
    if (suppressed) return { kind: 'suppressed' };
    return admitted.held ? { kind: 'accepted', held: admitted.held } : { kind: 'accepted' };
  }

  /** The quota and bulk rules for an email leaving on `today`; moves the counts when it passes. */
  private admit(e: NewEmail, guards: AcceptGuards, today: string): Refusal | { held?: string } {
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
    return bulk?.held ? { held: bulk.held } : {};
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
      e.error ?? null,
      e.errorCode ?? null,
      e.createdAt,
      e.createdAt,
      e.status,
      e.system ? 1 : 0,
      e.scheduledAt ?? null,
    );
    this.q.insertRequest.run(e.id, e.request);
    this.tallies.countStatus(e.projectId, dayOf(e.createdAt), e.status);
    // A refused email is never sent: its files are not kept.
    if (e.status !== 'failed') for (const [i, content] of (e.attachments ?? []).entries()) this.q.insertAttachment.run(e.id, i, content.length, content);

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
    if (held) this.hold(e, held, e.createdAt, row);
  }

  /** Held by control, not a gateway: the delay says so, and waits for an announcement or the operator. */
  private hold(e: NewEmail, held: string, at: number, row: StatusRow): void {
    const details = { cause: 'volume', reason: held };
    this.q.setHeld.run(held, e.id);
    this.q.insertEventKeyed.run(e.id, 'deferred', '', 0, at, JSON.stringify(details), 'volume');
    this.fanout.notify(e.id, e.projectId, 'queued', at, { type: 'deferred', at, ...details }, row);
  }

  async list(projectId: string, q: EmailQuery): Promise<{ emails: EmailRow[]; hasMore: boolean }> {
    const where = ['project_id = ?'];
    const args: unknown[] = [projectId];
    const add = (sql: string, v: unknown) => {
      where.push(sql);
      args.push(v);
    };
    if (q.after) add('id < ?', q.after);
    if (q.before) add('id > ?', q.before);
    if (q.status) add('status = ?', q.status);
    if (q.since !== undefined) add('created_at >= ?', q.since);
    if (q.until !== undefined) add('created_at <= ?', q.until);
    if (q.tag !== undefined) add("EXISTS (SELECT 1 FROM email_requests r, json_each(r.request, '$.tags') WHERE r.email_id = emails.id AND value = ?)", q.tag);
    // `before` pages towards newer emails: read upwards from the cursor, then show newest first.
    const order = q.before && !q.after ? 'ASC' : 'DESC';
    const rows = this.db.prepare(`SELECT ${EMAIL_COLUMNS} FROM emails WHERE ${where.join(' AND ')} ORDER BY id ${order} LIMIT ?`).all(...args, q.limit + 1);
    const { items, hasMore } = pageOf(rows, q.limit, order === 'ASC', toEmail);
    return { emails: items, hasMore };
  }

  async due(now: number, limit: number): Promise<Array<{ id: string; projectId: string }>> {
    return this.q.due.all(now, limit).map((r: any) => ({ id: r.id, projectId: r.project_id }));
  }

  release(id: string, guards: AcceptGuards, now: number): Promise<Acceptance | { kind: 'gone' }> {
    return this.writer.run((): Acceptance | { kind: 'gone' } => {
      const r = this.q.byId.get(id) as any;
      if (r?.status !== 'scheduled') return { kind: 'gone' };
      const e = releasedEmail(r, this.q.recipients.all(id) as Array<{ address: string; kind: string; status: string }>, now);
      const admitted = this.admit(e, guards, dayOf(now));
      if ('kind' in admitted) {
        const err = refusalText(admitted);
        this.q.setStatus.run('failed', err.message, err.code, now, id);
        this.q.setRecipients.run('failed', now, id);
        const details = { reason: err.message, code: err.code };
        this.q.insertEvent.run(id, 'failed', '', 0, now, JSON.stringify(details));
        this.fanout.reach(id, e.projectId, 'failed', now, { type: 'failed', at: now, ...details });
        return admitted;
      }
      this.q.setStatus.run('queued', null, null, now, id);
      this.q.insertEvent.run(id, 'queued', '', 0, now, null);
      this.fanout.reach(id, e.projectId, 'queued', now, { type: 'queued', at: now });
      if (admitted.held) this.hold(e, admitted.held, now, this.q.byId.get(id) as StatusRow);
      return admitted.held ? { kind: 'accepted', held: admitted.held } : { kind: 'accepted' };
    });
  }

  reschedule(projectId: string, id: string, at: number, now: number): Promise<ScheduleChange> {
    return this.writer.run((): ScheduleChange => {
      const r = this.q.email.get(id, projectId) as any;
      if (!r) return { kind: 'not_found' };
      if (r.status !== 'scheduled') return { kind: 'not_scheduled', status: r.status };
      this.q.setScheduled.run(at, now, id);
      // Each move is its own event (the dedupe key keeps them apart).
      this.q.insertEventKeyed.run(id, 'rescheduled', '', 0, now, JSON.stringify({ scheduled_at: new Date(at).toISOString() }), String(now));
      return { kind: 'done' };
    });
  }

  cancel(projectId: string, id: string, now: number): Promise<ScheduleChange> {
    return this.writer.run((): ScheduleChange => {
      const r = this.q.email.get(id, projectId) as any;
      if (!r) return { kind: 'not_found' };
      if (r.status !== 'scheduled') return { kind: 'not_scheduled', status: r.status };
      this.q.setStatus.run('canceled', null, null, now, id);
      this.q.setRecipients.run('canceled', now, id);
      this.q.insertEvent.run(id, 'canceled', '', 0, now, null);
      this.fanout.reach(id, projectId, 'canceled', now, { type: 'canceled', at: now });
      return { kind: 'done' };
    });
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
    // Not waiting for the disk: a mark a power loss undoes means the email is dispatched again, and
    // the gateway answers a key it holds as a duplicate (GroupWriter.run).
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
    }, false);
  }

  async attachments(emailId: string): Promise<Buffer[]> {
    return this.q.attachments.all(emailId) as Buffer[];
  }

  async owner(emailId: string): Promise<EmailOwner | undefined> {
    const r = this.q.owner.get(emailId) as any;
    return r ? { id: r.id, projectId: r.project_id, projectName: r.project_name, bulk: !!r.bulk } : undefined;
  }

  async recipientAt(emailId: string, index: number): Promise<string | undefined> {
    return this.q.recipientAt.get(emailId, index) as string | undefined;
  }
}
