// Emails in SQLite: acceptance (quota and bulk rules judged in the insert's own
// write, so concurrent sends never overshoot), release, cancel, reads, dispatch
// bookkeeping. What an intent changes is the lifecycle's (control/mail/lifecycle.ts):
// each loads the state in its write, asks the lifecycle, and writes its changes.
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import { accept, cancel, type LoadedCounts, release, releasing, reschedule, type Screened, screen, suppressionLookups } from '../../mail/lifecycle.js';
import { type EmailStatus, readRequest, type SuppressionScope } from '../../mail/vocabulary.js';
import type {
  Acceptance,
  AcceptGuards,
  EmailOwner,
  EmailQuery,
  EmailRow,
  Emails,
  EmailSearch,
  EmailSearchPage,
  NewEmail,
  PendingEmail,
  ScheduleChange,
  StoredEmail,
} from '../index.js';
import { pageOf } from '../page.js';
import type { DayTallies } from './tallies.js';
import type { SqliteChanges } from './changes.js';
import { EMAIL_COLUMNS, RECIPIENTS_SQL, toEmail, toLoadedEmail, toRecipient } from './rows.js';
import { SqliteEmailSearch } from './email-search.js';

export class SqliteEmails implements Emails {
  private readonly q;
  private readonly searcher;

  constructor(
    private readonly db: Db,
    private readonly writer: GroupWriter,
    private readonly tallies: DayTallies,
    private readonly changes: SqliteChanges,
  ) {
    this.searcher = new SqliteEmailSearch(db);
    this.q = {
      attachments: db.prepare('SELECT content FROM email_attachments WHERE email_id = ? ORDER BY position').pluck(),
      email: db.prepare(`SELECT ${EMAIL_COLUMNS} FROM emails WHERE id = ? AND project_id = ?`),
      byId: db.prepare(`SELECT ${EMAIL_COLUMNS} FROM emails WHERE id = ?`),
      due: db.prepare("SELECT id, project_id FROM emails WHERE status = 'scheduled' AND scheduled_at <= ? ORDER BY scheduled_at LIMIT ?"),
      // INDEXED BY: counted on the partial index, never a scan of the table.
      countScheduled: db.prepare("SELECT count(*) AS n FROM emails INDEXED BY emails_scheduled WHERE status = 'scheduled'"),
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
      subjectDay: db.prepare('SELECT count FROM bulk_subject_daily WHERE project_id = ? AND day = ? AND subject_hash = ?').pluck(),
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
    const scopes = new Map<string, SuppressionScope>();
    for (const address of suppressionLookups(sent, guards)) {
      const scope = this.q.suppression.get(sent.projectId, address) as SuppressionScope | undefined;
      if (scope) scopes.set(address, scope);
    }
    const s = screen(sent, guards, scopes);
    const { outcome, changes } = accept(s, this.counts(s), this.changes.hooksOf(sent.projectId));
    this.changes.write(changes);
    return outcome;
  }

  /** What the quota and bulk rules read for a screened email: usage from the tallies, bulk counts from their tables. */
  private counts(s: Screened): LoadedCounts {
    const p = s.email.projectId;
    const counts: LoadedCounts = {};
    if (s.quota) counts.usage = this.tallies.usageOf(p, s.day);
    if (s.bulk)
      counts.bulk = {
        sameSubjectToday: (this.q.subjectDay.get(p, s.day, s.bulk.subjectHash) as number | undefined) ?? 0,
        today: (this.q.bulkDay.get(p, s.day) as number | undefined) ?? 0,
        previousDays: this.q.bulkSince.get(p, s.bulk.since, s.day) as number,
        allowance: this.q.allowed.get(p, s.day) as number,
      };
    return counts;
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

  async countScheduled(): Promise<number> {
    return (this.q.countScheduled.get() as { n: number }).n;
  }

  release(id: string, guards: AcceptGuards, now: number): Promise<Acceptance | { kind: 'gone' }> {
    return this.writer.run((): Acceptance | { kind: 'gone' } => {
      const email = this.loaded(this.q.byId.get(id));
      const s = releasing(email, guards, now);
      if (!email || !s) return { kind: 'gone' };
      const { outcome, changes } = release(email, s, this.counts(s), this.changes.hooksOf(email.projectId), now);
      this.changes.write(changes);
      return outcome;
    });
  }

  reschedule(projectId: string, id: string, at: number, now: number): Promise<ScheduleChange> {
    return this.writer.run((): ScheduleChange => {
      const { outcome, changes } = reschedule(this.q.email.get(id, projectId) as { id: string; status: EmailStatus } | undefined, at, now);
      this.changes.write(changes);
      return outcome;
    });
  }

  cancel(projectId: string, id: string, now: number): Promise<ScheduleChange> {
    return this.writer.run((): ScheduleChange => {
      const { outcome, changes } = cancel(this.loaded(this.q.email.get(id, projectId)), this.changes.hooksOf(projectId), now);
      this.changes.write(changes);
      return outcome;
    });
  }

  /** An email row (EMAIL_COLUMNS) as the lifecycle takes it, with its recipients. */
  private loaded(r: unknown) {
    return r ? toLoadedEmail(r, this.q.recipients.all((r as { id: string }).id)) : undefined;
  }

  async get(projectId: string, id: string): Promise<StoredEmail | undefined> {
    return this.stored(this.q.email.get(id, projectId));
  }

  async find(id: string): Promise<StoredEmail | undefined> {
    return this.stored(this.q.byId.get(id));
  }

  async search(q: EmailSearch): Promise<EmailSearchPage> {
    return this.searcher.search(q);
  }

  /** An email row (EMAIL_COLUMNS) with its recipients and events. */
  private stored(r: any): StoredEmail | undefined {
    if (!r) return undefined;
    const id: string = r.id;
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
          const { text: _text, html: _html, ...rest } = readRequest(request);
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
