// Received mail in SQLite: the parsed email, its raw message and attachments, and its email.received
// webhook messages in one write (idempotent by the gateway's id: a redelivered event changes nothing).
import { prefixedId } from '../../../core/ids.js';
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import type { InboundAttachmentRow, InboundEmailRow, InboundEmails, InboundQuery, NewInboundEmail } from '../index.js';
import { pageOf } from '../page.js';
import { INBOUND_COLUMNS, toInboundEmail as toRow, toWebhook } from './rows.js';

export class SqliteInbound implements InboundEmails {
  private readonly q;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
  ) {
    this.q = {
      insert: db.prepare(`INSERT OR IGNORE INTO inbound_emails (${INBOUND_COLUMNS}, raw)
        VALUES (@id, @projectId, @createdAt, @mailFrom, @rcptTo, @from, @to, @cc, @bcc, @replyTo, @subject, @messageId, @text, @html, @headers, @auth, @remoteIp, @helo, @size, @attachments, @raw)`),
      insertAttachment: db.prepare('INSERT INTO inbound_attachments (email_id, id, content) VALUES (?, ?, ?)'),
      webhooks: db.prepare('SELECT * FROM webhooks WHERE project_id = ? ORDER BY created_at, id'),
      insertDelivery: db.prepare(`INSERT INTO webhook_deliveries (id, webhook_id, project_id, payload, attempt, next_attempt_at, status, created_at)
        VALUES (?, ?, ?, ?, 0, ?, 'pending', ?)`),
      get: db.prepare(`SELECT ${INBOUND_COLUMNS} FROM inbound_emails WHERE id = ? AND project_id = ?`),
      cursor: db.prepare('SELECT created_at, id FROM inbound_emails WHERE id = ? AND project_id = ?'),
      first: db.prepare(`SELECT ${INBOUND_COLUMNS} FROM inbound_emails WHERE project_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`),
      after: db.prepare(
        `SELECT ${INBOUND_COLUMNS} FROM inbound_emails WHERE project_id = ? AND (created_at, id) < (?, ?) ORDER BY created_at DESC, id DESC LIMIT ?`,
      ),
      before: db.prepare(`SELECT ${INBOUND_COLUMNS} FROM inbound_emails WHERE project_id = ? AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?`),
      attachment: db.prepare(
        'SELECT a.content, e.attachments FROM inbound_attachments a JOIN inbound_emails e ON e.id = a.email_id WHERE a.email_id = ? AND a.id = ? AND e.project_id = ?',
      ),
      raw: db.prepare('SELECT raw FROM inbound_emails WHERE id = ? AND project_id = ?').pluck(),
      receiving: db.prepare(
        `SELECT lower(name) AS domain, project_id FROM domains WHERE receiving = 1 AND status = 'verified' ORDER BY verified_at, created_at, id`,
      ),
    };
  }

  receive(e: NewInboundEmail, payload: string): Promise<boolean> {
    return this.writer.run(() => {
      const inserted =
        this.q.insert.run({
          ...e,
          rcptTo: JSON.stringify(e.rcptTo),
          to: JSON.stringify(e.to),
          cc: JSON.stringify(e.cc),
          bcc: JSON.stringify(e.bcc),
          replyTo: JSON.stringify(e.replyTo),
          headers: JSON.stringify(e.headers),
          auth: JSON.stringify(e.auth),
          attachments: JSON.stringify(e.attachments),
          raw: Buffer.from(e.raw),
        }).changes > 0;
      if (!inserted) return false;
      for (const [i, a] of e.attachments.entries()) this.q.insertAttachment.run(e.id, a.id, Buffer.from(e.contents[i] ?? new Uint8Array()));
      const hooks = this.q.webhooks
        .all(e.projectId)
        .map(toWebhook)
        .filter((w) => w.enabled && w.statuses.includes('email.received'));
      for (const w of hooks) this.q.insertDelivery.run(prefixedId('msg'), w.id, e.projectId, payload, e.createdAt, e.createdAt);
      return true;
    });
  }

  async get(projectId: string, id: string): Promise<InboundEmailRow | undefined> {
    const r = this.q.get.get(id, projectId);
    return r ? toRow(r) : undefined;
  }

  async list(projectId: string, q: InboundQuery): Promise<{ emails: InboundEmailRow[]; hasMore: boolean } | undefined> {
    const cursorId = q.after ?? q.before;
    if (cursorId === undefined) {
      const { items, hasMore } = pageOf(this.q.first.all(projectId, q.limit + 1), q.limit, false, toRow);
      return { emails: items, hasMore };
    }
    const c = this.q.cursor.get(cursorId, projectId) as { created_at: number; id: string } | undefined;
    if (!c) return undefined;
    const backwards = q.before !== undefined;
    const rows = (backwards ? this.q.before : this.q.after).all(projectId, c.created_at, c.id, q.limit + 1);
    const { items, hasMore } = pageOf(rows, q.limit, backwards, toRow);
    return { emails: items, hasMore };
  }

  async attachment(projectId: string, emailId: string, attachmentId: string): Promise<{ row: InboundAttachmentRow; content: Uint8Array } | undefined> {
    const r = this.q.attachment.get(emailId, attachmentId, projectId) as { content: Buffer; attachments: string } | undefined;
    const row = r && (JSON.parse(r.attachments) as InboundAttachmentRow[]).find((a) => a.id === attachmentId);
    return r && row ? { row, content: r.content } : undefined;
  }

  async raw(projectId: string, id: string): Promise<Uint8Array | undefined> {
    return (this.q.raw.get(id, projectId) as Buffer | undefined) ?? undefined;
  }

  async receivingDomains(): Promise<Array<{ domain: string; projectId: string }>> {
    const seen = new Set<string>();
    const out: Array<{ domain: string; projectId: string }> = [];
    for (const r of this.q.receiving.all() as Array<{ domain: string; project_id: string }>) {
      if (seen.has(r.domain)) continue;
      seen.add(r.domain);
      out.push({ domain: r.domain, projectId: r.project_id });
    }
    return out;
  }
}
