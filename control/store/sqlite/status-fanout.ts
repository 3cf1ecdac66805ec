// What follows an email's status change, inside the change's own write: the status
// is counted once per email in the daily analytics, and a message is queued for every
// webhook of the project that wants it (control/webhooks/payload.ts says what).
import crypto from 'node:crypto';
import { dayOf } from '../../../core/clock.js';
import type { Db } from '../../../core/sqlite/open.js';
import { webhookPayload, wantsEvent } from '../../webhooks/payload.js';
import type { ProjectCache } from '../cache.js';
import type { WebhookRow } from '../index.js';
import type { DayTallies } from './tallies.js';
import { toWebhook } from './rows.js';

/** What reach() and notify() need of an email. */
export interface StatusRow {
  reached: string;
  from_addr: string;
  subject: string;
  /** The send request (JSON) when the caller has it; else notify() reads it, only for an event a webhook wants (it holds the bodies). */
  request?: string;
  created_at: number;
}

export class StatusFanout {
  private readonly q;

  constructor(
    db: Db,
    private readonly tallies: DayTallies,
    private readonly hooks: ProjectCache<WebhookRow[]>,
  ) {
    this.q = {
      emailForStatus: db.prepare('SELECT reached, from_addr, subject, created_at FROM emails WHERE id = ?'),
      request: db.prepare('SELECT request FROM email_requests WHERE email_id = ?').pluck(),
      setReached: db.prepare('UPDATE emails SET reached = ? WHERE id = ?'),
      webhooks: db.prepare('SELECT * FROM webhooks WHERE project_id = ? ORDER BY created_at, id'),
      insertDelivery: db.prepare(`INSERT INTO webhook_deliveries (id, webhook_id, project_id, payload, attempt, next_attempt_at, status, created_at)
        VALUES (?, ?, ?, ?, 0, ?, 'pending', ?)`),
    };
  }

  /** An email reached a status: counted once per status, and queued for the webhooks that want it. */
  reach(emailId: string, projectId: string, status: string, at: number, event: Record<string, unknown>): void {
    const row = this.q.emailForStatus.get(emailId) as StatusRow;
    if (this.mark(row, projectId, status, at)) this.q.setReached.run(row.reached, emailId);
    this.notify(emailId, projectId, status, at, event, row);
  }

  /**
   * Adds `status` to row.reached and counts it, unless the email had reached it before (then
   * false). For a caller that writes row.reached itself, with the rest of its update of the row.
   */
  mark(row: StatusRow, projectId: string, status: string, at: number): boolean {
    const reached: string[] = row.reached ? row.reached.split(',') : [];
    if (reached.includes(status)) return false;
    reached.push(status);
    row.reached = reached.join(',');
    this.tallies.countStatus(projectId, dayOf(at), status);
    return true;
  }

  /** Queues the change for every webhook of the project that wants it. */
  notify(emailId: string, projectId: string, status: string, at: number, event: Record<string, unknown>, row: StatusRow): void {
    const hooks = this.hooks.get(projectId, () => this.q.webhooks.all(projectId).map(toWebhook)).filter((w) => wantsEvent(w, status, event));
    if (!hooks.length) return;
    const req = JSON.parse(row.request ?? (this.q.request.get(emailId) as string)) as { to: string[]; tags: string[] };
    const payload = webhookPayload(
      { id: emailId, from: row.from_addr, to: req.to, subject: row.subject, tags: req.tags, createdAt: row.created_at },
      status,
      at,
      event,
    );
    for (const w of hooks) {
      const id = `msg_${crypto.randomUUID().replace(/-/g, '')}`;
      this.q.insertDelivery.run(id, w.id, projectId, payload, at, at);
    }
  }
}
