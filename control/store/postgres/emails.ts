// Emails on PostgreSQL: acceptance (accept.ts), reads, and dispatch claimed per node.
// Several controls dispatch from one database: undispatched() claims what it returns
// for a lease (dispatch_claimed_until, on the database's clock), so no two nodes hand
// the same email on at once. The node renews its own claims each time it asks; a node
// that dies leaves them to expire, and another node takes them over. Closing the store
// gives them up at once.
import type {
  AcceptGuards,
  Acceptance,
  EmailOwner,
  EmailQuery,
  EmailRow,
  Emails,
  EmailSearch,
  EmailSearchPage,
  NewEmail,
  PendingEmail,
  RecipientRow,
  ScheduleChange,
  StoredEmail,
} from '../index.js';
import { reschedule } from '../../mail/lifecycle.js';
import { readRequest } from '../../mail/vocabulary.js';
import type { Acceptor } from './accept.js';
import { writeChanges } from './changes.js';
import type { PgDb } from './db.js';
import { pageOf } from '../page.js';
import { DB_NOW, EMAIL_COLUMNS, RECIPIENTS_SQL, toEmail, toRecipient } from './rows.js';
import { searchPg } from './email-search.js';

/** How long a node's claim on an email lasts: longer than one dispatch round takes. */
export const DISPATCH_LEASE_MS = 30_000;

export class PgEmails implements Emails {
  constructor(
    private readonly db: PgDb,
    private readonly acceptor: Acceptor,
    /** This node's identity among the nodes (store.ts). */
    private readonly node: string,
  ) {}

  accept(e: NewEmail, guards: AcceptGuards = {}): Promise<Acceptance> {
    return this.acceptor.submit([e], guards)[0]!;
  }

  acceptMany(list: NewEmail[], guards: AcceptGuards = {}): Array<Promise<Acceptance>> {
    return this.acceptor.submit(list, guards);
  }

  async get(projectId: string, id: string): Promise<StoredEmail | undefined> {
    const r = await this.db.query(`SELECT ${EMAIL_COLUMNS} FROM emails WHERE id = $1 AND project_id = $2`, [id, projectId]);
    return this.stored(r.rows[0]);
  }

  async find(id: string): Promise<StoredEmail | undefined> {
    const r = await this.db.query(`SELECT ${EMAIL_COLUMNS} FROM emails WHERE id = $1`, [id]);
    return this.stored(r.rows[0]);
  }

  search(q: EmailSearch): Promise<EmailSearchPage> {
    return searchPg(this.db, q);
  }

  /** An email row (EMAIL_COLUMNS) with its recipients and events. */
  private async stored(row: any): Promise<StoredEmail | undefined> {
    if (!row) return undefined;
    const id: string = row.id;
    const [recipients, events] = await Promise.all([
      this.db.query(RECIPIENTS_SQL, [id]),
      this.db.query('SELECT type, recipient, attempt, at, details FROM email_events WHERE email_id = $1 ORDER BY id', [id]),
    ]);
    return {
      email: toEmail(row),
      recipients: recipients.rows.map(toRecipient),
      events: events.rows.map((x: any) => ({ type: x.type, recipient: x.recipient, attempt: x.attempt, at: x.at, details: x.details ?? null })),
    };
  }

  async list(projectId: string, q: EmailQuery): Promise<{ emails: EmailRow[]; hasMore: boolean }> {
    const where = ['project_id = $1'];
    const args: unknown[] = [projectId];
    const arg = (v: unknown) => `$${args.push(v)}`;
    if (q.after) where.push(`id < ${arg(q.after)}`);
    if (q.before) where.push(`id > ${arg(q.before)}`);
    if (q.status) where.push(`status = ${arg(q.status)}`);
    if (q.since !== undefined) where.push(`created_at >= ${arg(q.since)}`);
    if (q.until !== undefined) where.push(`created_at <= ${arg(q.until)}`);
    if (q.tag !== undefined) where.push(`(request::jsonb -> 'tags') ? ${arg(q.tag)}`);
    // `before` pages towards newer emails: read upwards from the cursor, then show newest first.
    const order = q.before && !q.after ? 'ASC' : 'DESC';
    const r = await this.db.query(`SELECT ${EMAIL_COLUMNS} FROM emails WHERE ${where.join(' AND ')} ORDER BY id ${order} LIMIT ${arg(q.limit + 1)}`, args);
    const { items, hasMore } = pageOf(r.rows, q.limit, order === 'ASC', toEmail);
    return { emails: items, hasMore };
  }

  async due(now: number, limit: number): Promise<Array<{ id: string; projectId: string }>> {
    const r = await this.db.query("SELECT id, project_id FROM emails WHERE status = 'scheduled' AND scheduled_at <= $1 ORDER BY scheduled_at LIMIT $2", [
      now,
      limit,
    ]);
    return r.rows.map((x: any) => ({ id: x.id, projectId: x.project_id }));
  }

  async countScheduled(): Promise<number> {
    const r = await this.db.query("SELECT count(*)::int AS n FROM emails WHERE status = 'scheduled'");
    return r.rows[0].n;
  }

  release(id: string, guards: AcceptGuards, now: number): Promise<Acceptance | { kind: 'gone' }> {
    return this.acceptor.release(id, guards, now);
  }

  async reschedule(projectId: string, id: string, at: number, now: number): Promise<ScheduleChange> {
    return this.db.tx(async (tx) => {
      const r = (await tx.query('SELECT id, status FROM emails WHERE id = $1 AND project_id = $2 FOR UPDATE', [id, projectId])).rows[0];
      const { outcome, changes } = reschedule(r, at, now);
      await writeChanges(tx, changes);
      return outcome;
    });
  }

  cancel(projectId: string, id: string, now: number): Promise<ScheduleChange> {
    return this.acceptor.cancel(projectId, id, now);
  }

  async undispatched(limit: number, projectId?: string): Promise<PendingEmail[]> {
    const claimed = await this.db.query(
      `UPDATE emails SET dispatch_claimed_until = ${DB_NOW} + ${DISPATCH_LEASE_MS}, dispatch_claimed_by = $1
       WHERE id IN (
         SELECT id FROM emails
         WHERE dispatched_at IS NULL AND status = 'queued' AND held IS NULL AND ($3::text IS NULL OR project_id = $3)
           AND (dispatch_claimed_until IS NULL OR dispatch_claimed_until < ${DB_NOW} OR dispatch_claimed_by = $1)
         ORDER BY created_at LIMIT $2
         FOR UPDATE SKIP LOCKED)
       RETURNING ${EMAIL_COLUMNS}`,
      [this.node, limit, projectId ?? null],
    );
    if (!claimed.rows.length) return [];
    const rows = claimed.rows.sort((a: any, b: any) => a.created_at - b.created_at || (a.id < b.id ? -1 : 1));
    const recipients = await this.db.query(
      'SELECT email_id, address, kind, status, updated_at FROM email_recipients WHERE email_id = ANY($1::text[]) ORDER BY email_id, position',
      [rows.map((r: any) => r.id)],
    );
    const byEmail = new Map<string, RecipientRow[]>();
    for (const r of recipients.rows) {
      const list = byEmail.get(r.email_id) ?? [];
      list.push(toRecipient(r));
      byEmail.set(r.email_id, list);
    }
    return rows.map((r: any) => ({ ...toEmail(r), recipients: byEmail.get(r.id) ?? [] }));
  }

  async markDispatched(ids: string[], at: number): Promise<void> {
    if (!ids.length) return;
    await this.db.tx(async (tx) => {
      await tx.query('UPDATE emails SET dispatched_at = $1, dispatch_claimed_until = NULL, dispatch_claimed_by = NULL WHERE id = ANY($2::text[])', [at, ids]);
      // The platform's own mail (sign-in codes) keeps no body once the gateway holds it: the code lives only as a keyed hash.
      const system = await tx.query<{ id: string; request: string }>('SELECT id, request FROM emails WHERE id = ANY($1::text[]) AND system', [ids]);
      for (const r of system.rows) {
        const { text: _text, html: _html, ...rest } = readRequest(r.request);
        await tx.query('UPDATE emails SET request = $1 WHERE id = $2', [JSON.stringify(rest), r.id]);
      }
    }, ids.length);
  }

  /** Gives up this node's claims (closing): another node may take them at once. */
  async releaseClaims(): Promise<void> {
    await this.db.query(
      "UPDATE emails SET dispatch_claimed_until = NULL, dispatch_claimed_by = NULL WHERE dispatch_claimed_by = $1 AND dispatched_at IS NULL AND status = 'queued' AND held IS NULL",
      [this.node],
    );
  }

  async attachments(emailId: string): Promise<Buffer[]> {
    const r = await this.db.query<{ content: Buffer }>('SELECT content FROM email_attachments WHERE email_id = $1 ORDER BY position', [emailId]);
    return r.rows.map((x) => x.content);
  }

  async owner(emailId: string): Promise<EmailOwner | undefined> {
    const r = await this.db.query(
      'SELECT e.id, e.project_id, e.bulk, p.name AS project_name FROM emails e JOIN projects p ON p.id = e.project_id WHERE e.id = $1',
      [emailId],
    );
    const x = r.rows[0];
    return x ? { id: x.id, projectId: x.project_id, projectName: x.project_name, bulk: x.bulk } : undefined;
  }

  async recipientAt(emailId: string, index: number): Promise<string | undefined> {
    const r = await this.db.query<{ address: string }>('SELECT address FROM email_recipients WHERE email_id = $1 AND position = $2', [emailId, index]);
    return r.rows[0]?.address;
  }
}
