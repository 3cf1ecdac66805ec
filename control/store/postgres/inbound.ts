// Received mail on PostgreSQL: the parsed email, its raw message and attachments, and its email.received
// webhook messages in one transaction (idempotent by the gateway's id: a redelivered event changes nothing).
import { prefixedId } from '../../../core/ids.js';
import type { InboundAttachmentRow, InboundEmailRow, InboundEmails, InboundQuery, NewInboundEmail } from '../index.js';
import { pageOf } from '../page.js';
import type { PgDb } from './db.js';
import { INBOUND_COLUMNS, toInboundEmail as toRow, toWebhook } from './rows.js';

export class PgInbound implements InboundEmails {
  constructor(private readonly db: PgDb) {}

  receive(e: NewInboundEmail, payload: string): Promise<boolean> {
    return this.db.tx(async (tx) => {
      const json = JSON.stringify;
      const inserted = await tx.query(
        `INSERT INTO inbound_emails (${INBOUND_COLUMNS}, raw)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)
         ON CONFLICT (id) DO NOTHING`,
        [
          e.id,
          e.projectId,
          e.createdAt,
          e.mailFrom,
          json(e.rcptTo),
          e.from,
          json(e.to),
          json(e.cc),
          json(e.bcc),
          json(e.replyTo),
          e.subject,
          e.messageId,
          e.text,
          e.html,
          json(e.headers),
          json(e.auth),
          e.remoteIp,
          e.helo,
          e.size,
          json(e.attachments),
          Buffer.from(e.raw),
        ],
      );
      if (!inserted.rowCount) return false;
      for (const [i, a] of e.attachments.entries())
        await tx.query('INSERT INTO inbound_attachments (email_id, id, content) VALUES ($1, $2, $3)', [
          e.id,
          a.id,
          Buffer.from(e.contents[i] ?? new Uint8Array()),
        ]);
      const hooks = (await tx.query('SELECT * FROM webhooks WHERE project_id = $1 ORDER BY created_at, id', [e.projectId])).rows
        .map(toWebhook)
        .filter((w) => w.enabled && w.statuses.includes('email.received'));
      if (hooks.length)
        await tx.query(
          `INSERT INTO webhook_deliveries (id, webhook_id, project_id, payload, attempt, next_attempt_at, status, created_at)
           SELECT id, w, $2, $3, 0, $4, 'pending', $4 FROM unnest($1::text[], $5::text[]) AS x(id, w)`,
          [hooks.map(() => prefixedId('msg')), e.projectId, payload, e.createdAt, hooks.map((w) => w.id)],
        );
      return true;
    });
  }

  async get(projectId: string, id: string): Promise<InboundEmailRow | undefined> {
    const r = (await this.db.query(`SELECT ${INBOUND_COLUMNS} FROM inbound_emails WHERE id = $1 AND project_id = $2`, [id, projectId])).rows[0];
    return r ? toRow(r) : undefined;
  }

  async list(projectId: string, q: InboundQuery): Promise<{ emails: InboundEmailRow[]; hasMore: boolean } | undefined> {
    const cursorId = q.after ?? q.before;
    if (cursorId === undefined) {
      const rows = (
        await this.db.query(`SELECT ${INBOUND_COLUMNS} FROM inbound_emails WHERE project_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, [
          projectId,
          q.limit + 1,
        ])
      ).rows;
      const { items, hasMore } = pageOf(rows, q.limit, false, toRow);
      return { emails: items, hasMore };
    }
    const c = (await this.db.query('SELECT created_at, id FROM inbound_emails WHERE id = $1 AND project_id = $2', [cursorId, projectId])).rows[0];
    if (!c) return undefined;
    const backwards = q.before !== undefined;
    const rows = (
      await this.db.query(
        backwards
          ? `SELECT ${INBOUND_COLUMNS} FROM inbound_emails WHERE project_id = $1 AND (created_at, id) > ($2, $3) ORDER BY created_at, id LIMIT $4`
          : `SELECT ${INBOUND_COLUMNS} FROM inbound_emails WHERE project_id = $1 AND (created_at, id) < ($2, $3) ORDER BY created_at DESC, id DESC LIMIT $4`,
        [projectId, c.created_at, c.id, q.limit + 1],
      )
    ).rows;
    const { items, hasMore } = pageOf(rows, q.limit, backwards, toRow);
    return { emails: items, hasMore };
  }

  async attachment(projectId: string, emailId: string, attachmentId: string): Promise<{ row: InboundAttachmentRow; content: Uint8Array } | undefined> {
    const r = (
      await this.db.query(
        'SELECT a.content, e.attachments FROM inbound_attachments a JOIN inbound_emails e ON e.id = a.email_id WHERE a.email_id = $1 AND a.id = $2 AND e.project_id = $3',
        [emailId, attachmentId, projectId],
      )
    ).rows[0];
    const row = r && (r.attachments as InboundAttachmentRow[]).find((a) => a.id === attachmentId);
    return r && row ? { row, content: r.content } : undefined;
  }

  async raw(projectId: string, id: string): Promise<Uint8Array | undefined> {
    return (await this.db.query('SELECT raw FROM inbound_emails WHERE id = $1 AND project_id = $2', [id, projectId])).rows[0]?.raw;
  }

  async receivingDomains(): Promise<Array<{ domain: string; projectId: string }>> {
    const rows = (
      await this.db.query(
        `SELECT DISTINCT ON (lower(name)) lower(name) AS domain, project_id FROM domains
         WHERE receiving AND status = 'verified' ORDER BY lower(name), verified_at, created_at, id`,
      )
    ).rows;
    return rows.map((r: any) => ({ domain: r.domain, projectId: r.project_id }));
  }
}
