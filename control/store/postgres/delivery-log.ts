// Delivery events from the gateways, on PostgreSQL. Every control node reads every
// gateway's stream, so the same run may be applied by several nodes at once: an event is
// recorded by whichever inserts it first (unique key, ON CONFLICT DO NOTHING), and only
// that node moves its recipients and email through the status machine
// (common/status.ts), counts the status and queues webhooks. The email row is locked
// first, so two nodes applying the same run take turns per email. The cursor only moves
// forward (GREATEST), in the same transaction.
import { emailStatusOf, recipientStatusAfter } from '../../../common/status.js';
import type { AppliedEvent, DeliveryLog, GatewayEvent } from '../index.js';
import type { PgDb, Tx } from './db.js';
import { Fanout, type WebhookCache } from './fanout.js';

interface LockedEmail {
  project_id: string;
  status: string;
  bulk: boolean;
  reached: string;
  from_addr: string;
  subject: string;
  created_at: number;
  recipients: Array<{ address: string; status: string }>;
}

/** Events per transaction (see apply). */
const APPLY_CHUNK = 20;

export class PgDeliveryLog implements DeliveryLog {
  constructor(
    private readonly db: PgDb,
    private readonly hooks: WebhookCache,
  ) {}

  async cursor(gateway: string): Promise<number> {
    const r = await this.db.query<{ seq: number }>('SELECT seq FROM gateway_cursors WHERE gateway = $1', [gateway]);
    return r.rows[0]?.seq ?? 0;
  }

  /** A committed transaction is on the server's disk already (synchronous_commit). */
  durable(): Promise<void> {
    return Promise.resolve();
  }

  /**
   * Applied a few events per transaction: each transaction holds its emails' row locks until it
   * commits, and the dispatcher's markDispatched waits on those rows. Each chunk moves the cursor
   * with its events, so a crash between chunks loses nothing and repeats nothing.
   */
  async apply(gateway: string, events: GatewayEvent[]): Promise<AppliedEvent[]> {
    const applied: AppliedEvent[] = [];
    for (let i = 0; i < events.length; i += APPLY_CHUNK) applied.push(...(await this.applyChunk(gateway, events.slice(i, i + APPLY_CHUNK))));
    return applied;
  }

  private applyChunk(gateway: string, events: GatewayEvent[]): Promise<AppliedEvent[]> {
    return this.db.tx(async (tx) => {
      const cursor = (await tx.query<{ seq: number }>('SELECT seq FROM gateway_cursors WHERE gateway = $1', [gateway])).rows[0]?.seq ?? 0;
      const fanout = new Fanout(tx, this.hooks);
      const applied: AppliedEvent[] = [];
      const emails = await this.lock(
        tx,
        events.filter((ev) => ev.seq > cursor && ev.emailId).map((ev) => ev.emailId),
      );
      let last = cursor;
      for (const ev of events) {
        if (ev.seq <= cursor) continue;
        last = Math.max(last, ev.seq);
        const email = emails.get(ev.emailId);
        const a = email ? await this.applyOne(tx, fanout, ev, email) : undefined;
        if (a) applied.push(a);
      }
      if (last > cursor) {
        await tx.query(
          'INSERT INTO gateway_cursors (gateway, seq) VALUES ($1, $2) ON CONFLICT (gateway) DO UPDATE SET seq = GREATEST(gateway_cursors.seq, excluded.seq)',
          [gateway, last],
        );
      }
      await fanout.flush();
      return applied;
    }, events.length);
  }

  /**
   * The chunk's emails with their recipients, locked in one statement and in id order (a fixed order:
   * two nodes applying the same run cannot deadlock). One round trip for the chunk instead of one per
   * event; applyOne keeps each email's state as it writes it, for the chunk's later events.
   */
  private async lock(tx: Tx, ids: string[]): Promise<Map<string, LockedEmail>> {
    if (!ids.length) return new Map();
    const r = await tx.query<LockedEmail & { id: string }>(
      `SELECT e.id, e.project_id, e.status, e.bulk, e.reached, e.from_addr, e.subject, e.created_at,
         COALESCE((SELECT json_agg(json_build_object('address', r.address, 'status', r.status) ORDER BY r.position)
           FROM email_recipients r WHERE r.email_id = e.id), '[]') AS recipients
       FROM emails e WHERE e.id = ANY($1::text[]) ORDER BY e.id FOR UPDATE OF e`,
      [[...new Set(ids)]],
    );
    return new Map(r.rows.map((row) => [row.id, row]));
  }

  private async applyOne(tx: Tx, fanout: Fanout, ev: GatewayEvent, email: LockedEmail): Promise<AppliedEvent | undefined> {
    const projectId = email.project_id;
    const recipients = email.recipients;
    if (ev.recipientIndex !== undefined && !ev.recipient) {
      if (ev.soleRecipient && recipients.length !== 1) return undefined;
      const named = recipients[ev.recipientIndex];
      if (!named) return undefined;
      ev.recipient = named.address;
    }
    const inserted = await tx.query(
      `INSERT INTO email_events (email_id, type, recipient, attempt, at, details, dedupe) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT DO NOTHING RETURNING id`,
      [ev.emailId, ev.type, ev.recipient, ev.attempt, ev.at, JSON.stringify(ev.details), ev.dedupe ?? ''],
    );
    if (!inserted.rowCount) return undefined;
    for (const r of recipients) {
      if (ev.recipient && r.address !== ev.recipient) continue;
      // Unsubscribes, and complaints about bulk mail, stop the project's bulk mail to the address.
      if (ev.type === 'unsubscribed' || (ev.type === 'complained' && email.bulk)) {
        await tx.query(
          `INSERT INTO suppressions (project_id, address, reason, scope, email_id, created_at) VALUES ($1, $2, $3, 'bulk', $4, $5)
           ON CONFLICT (project_id, address) DO NOTHING`,
          [projectId, r.address, ev.type, ev.emailId, ev.at],
        );
      }
      const next = recipientStatusAfter(r.status, ev.type);
      if (!next) continue;
      r.status = next;
      await tx.query('UPDATE email_recipients SET status = $1, updated_at = $2 WHERE email_id = $3 AND address = $4', [next, ev.at, ev.emailId, r.address]);
      if (next === 'bounced') {
        await tx.query(
          `INSERT INTO suppressions (project_id, address, reason, scope, email_id, created_at) VALUES ($1, $2, 'bounced', 'all', $3, $4)
           ON CONFLICT (project_id, address) DO UPDATE SET scope = 'all', reason = excluded.reason, email_id = excluded.email_id, created_at = excluded.created_at
           WHERE suppressions.scope <> 'all'`,
          [projectId, r.address, ev.emailId, ev.at],
        );
      }
    }
    const emailStatus = emailStatusOf(recipients.map((r) => r.status));
    let reached = email.reached;
    if (emailStatus !== email.status || ev.type === 'deferred') {
      const source = {
        id: ev.emailId,
        projectId,
        from: email.from_addr,
        subject: email.subject,
        createdAt: email.created_at,
        request: async () => (await tx.query<{ request: string }>('SELECT request FROM emails WHERE id = $1', [ev.emailId])).rows[0]!.request,
      };
      reached = await fanout.reach(source, reached, emailStatus, ev.at, {
        type: ev.type,
        at: ev.at,
        ...(ev.recipient ? { recipient: ev.recipient } : {}),
        attempt: ev.attempt,
        ...ev.details,
      });
    }
    await tx.query('UPDATE emails SET status = $1, updated_at = $2, reached = $3 WHERE id = $4', [emailStatus, ev.at, reached, ev.emailId]);
    email.status = emailStatus;
    email.reached = reached;
    return { ...ev, emailStatus, projectId };
  }
}
