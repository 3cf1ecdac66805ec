// Delivery events from the gateways, in SQLite: each run is recorded with the
// gateway's cursor in one write; what the events change is the lifecycle's
// (control/mail/lifecycle.ts applyEvents).
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import { applyEvents, emailsToLoad, eventKey, type LoadedEmail, toRecord } from '../../mail/lifecycle.js';
import type { AppliedEvent, DeliveryLog, GatewayEvent, WebhookRow } from '../index.js';
import type { SqliteChanges } from './changes.js';
import { RECIPIENTS_SQL, toLoadedEmail } from './rows.js';

export class SqliteDeliveryLog implements DeliveryLog {
  private readonly q;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
    private readonly changes: SqliteChanges,
  ) {
    this.q = {
      cursor: db.prepare('SELECT seq FROM gateway_cursors WHERE gateway = ?').pluck(),
      setCursor: db.prepare('INSERT INTO gateway_cursors (gateway, seq) VALUES (?, ?) ON CONFLICT(gateway) DO UPDATE SET seq = excluded.seq'),
      // What the status machine and the webhooks need of the email (the request, with the bodies,
      // is read only for a change a webhook wants).
      email: db.prepare('SELECT id, project_id, status, bulk, reached, from_addr, subject, created_at FROM emails WHERE id = ?'),
      recipients: db.prepare(RECIPIENTS_SQL),
      insertEvent: db.prepare('INSERT OR IGNORE INTO email_events (email_id, type, recipient, attempt, at, details, dedupe) VALUES (?, ?, ?, ?, ?, ?, ?)'),
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
      const emails = new Map<string, LoadedEmail>();
      const hooks = new Map<string, WebhookRow[]>();
      for (const id of emailsToLoad(events, cursor)) {
        const r = this.q.email.get(id) as { project_id: string } | undefined;
        if (!r) continue;
        emails.set(id, toLoadedEmail(r, this.q.recipients.all(id)));
        hooks.set(r.project_id, this.changes.hooksOf(r.project_id));
      }
      const record = toRecord(events, cursor, emails);
      // The log's unique key tells a new event from a repeat (of this run too).
      const recorded = new Set<string>();
      for (const ev of record.events) {
        if (this.q.insertEvent.run(ev.emailId, ev.type, ev.recipient, ev.attempt, ev.at, JSON.stringify(ev.details), ev.dedupe ?? '').changes)
          recorded.add(eventKey(ev));
      }
      const { outcome, changes } = applyEvents({ emails, hooks }, record.events, recorded);
      this.changes.write(changes);
      if (record.cursor !== undefined) this.q.setCursor.run(gateway, record.cursor);
      return outcome;
    }, false);
  }
}
