// Delivery events from the gateways, in SQLite: each run is recorded with the
// gateway's cursor in one write, and moves recipients and emails through the status
// machine (common/status.ts).
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import { emailStatusOf, recipientStatusAfter } from '../../../common/status.js';
import type { AppliedEvent, DeliveryLog, GatewayEvent } from '../index.js';
import type { StatusFanout, StatusRow } from './status-fanout.js';
import { RECIPIENTS_SQL } from './rows.js';

export class SqliteDeliveryLog implements DeliveryLog {
  private readonly q;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
    private readonly fanout: StatusFanout,
  ) {
    this.q = {
      cursor: db.prepare('SELECT seq FROM gateway_cursors WHERE gateway = ?').pluck(),
      setCursor: db.prepare('INSERT INTO gateway_cursors (gateway, seq) VALUES (?, ?) ON CONFLICT(gateway) DO UPDATE SET seq = excluded.seq'),
      // What the status machine and the webhooks need of the email, read once per event (the request, with
      // the bodies, only by the fanout for an event a webhook wants).
      email: db.prepare('SELECT project_id, status, bulk, reached, from_addr, subject, created_at FROM emails WHERE id = ?'),
      recipients: db.prepare(RECIPIENTS_SQL),
      insertEvent: db.prepare('INSERT OR IGNORE INTO email_events (email_id, type, recipient, attempt, at, details, dedupe) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      setEmailStatus: db.prepare('UPDATE emails SET status = ?, updated_at = ?, reached = ? WHERE id = ?'),
      setRecipientStatus: db.prepare('UPDATE email_recipients SET status = ?, updated_at = ? WHERE email_id = ? AND address = ?'),
      suppress: db.prepare(`INSERT INTO suppressions (project_id, address, reason, scope, email_id, created_at) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT(project_id, address) DO NOTHING`),
      suppressAll: db.prepare(`INSERT INTO suppressions (project_id, address, reason, scope, email_id, created_at) VALUES (?, ?, ?, 'all', ?, ?)
        ON CONFLICT(project_id, address) DO UPDATE SET scope = 'all', reason = excluded.reason, email_id = excluded.email_id, created_at = excluded.created_at
        WHERE suppressions.scope <> 'all'`),
    };
  }

  async cursor(gateway: string): Promise<number> {
    return (this.q.cursor.get(gateway) as number | undefined) ?? 0;
  }

  durable(): Promise<void> {
    return this.writer.synced();
  }

  apply(gateway: string, events: GatewayEvent[]): Promise<AppliedEvent[]> {
    // Not fsynced commit by commit (with every commit fsynced, fsyncs took up to a third of control's
    // CPU per delivered email): the gateway sends these events again until durable() has let the
    // stream acknowledge them.
    return this.writer.run(() => {
      const cursor = (this.q.cursor.get(gateway) as number | undefined) ?? 0;
      const applied: AppliedEvent[] = [];
      let last = cursor;
      for (const ev of events) {
        if (ev.seq <= cursor) continue;
        last = Math.max(last, ev.seq);
        const email = this.q.email.get(ev.emailId) as (StatusRow & { project_id: string; status: string; bulk: number }) | undefined;
        if (!email) continue;
        const projectId = email.project_id;
        const recipients = this.q.recipients.all(ev.emailId) as Array<{ address: string; status: string }>;
        if (ev.recipientIndex !== undefined && !ev.recipient) {
          if (ev.soleRecipient && recipients.length !== 1) continue;
          const named = recipients[ev.recipientIndex];
          if (!named) continue;
          ev.recipient = named.address;
        }
        const inserted = this.q.insertEvent.run(ev.emailId, ev.type, ev.recipient, ev.attempt, ev.at, JSON.stringify(ev.details), ev.dedupe ?? '').changes;
        if (!inserted) continue;
        for (const r of recipients) {
          if (ev.recipient && r.address !== ev.recipient) continue;
          // Unsubscribes, and complaints about bulk mail, stop the project's bulk mail to the address.
          if (ev.type === 'unsubscribed') this.q.suppress.run(projectId, r.address, 'unsubscribed', 'bulk', ev.emailId, ev.at);
          if (ev.type === 'complained' && email.bulk) this.q.suppress.run(projectId, r.address, 'complained', 'bulk', ev.emailId, ev.at);
          const next = recipientStatusAfter(r.status, ev.type);
          if (!next) continue;
          r.status = next;
          this.q.setRecipientStatus.run(next, ev.at, ev.emailId, r.address);
          if (next === 'bounced') this.q.suppressAll.run(projectId, r.address, 'bounced', ev.emailId, ev.at);
        }
        const emailStatus = emailStatusOf(recipients.map((r) => r.status));
        const notify = emailStatus !== email.status || ev.type === 'deferred';
        // One update of the row: its status and the statuses it has reached (counted once each).
        if (notify) this.fanout.mark(email, projectId, emailStatus, ev.at);
        this.q.setEmailStatus.run(emailStatus, ev.at, email.reached, ev.emailId);
        if (notify) {
          this.fanout.notify(
            ev.emailId,
            projectId,
            emailStatus,
            ev.at,
            { type: ev.type, at: ev.at, ...(ev.recipient ? { recipient: ev.recipient } : {}), attempt: ev.attempt, ...ev.details },
            email,
          );
        }
        applied.push({ ...ev, emailStatus, projectId });
      }
      if (last > cursor) this.q.setCursor.run(gateway, last);
      return applied;
    }, false);
  }
}
