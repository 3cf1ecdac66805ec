// Delivery events from the gateways, on PostgreSQL. Every control node reads every
// gateway's stream, so the same run may be applied by several nodes at once: an event is
// recorded by whichever inserts it first (unique key, ON CONFLICT DO NOTHING), and only
// that node moves its recipients and email through the status machine
// (common/status.ts), counts the status and queues webhooks. The email rows are locked
// first, so two nodes applying the same run take turns per email. A chunk of events is
// written set-based: its events in one insert, then the end state of its recipients,
// emails and suppressions in one statement each (a round trip per table, not three per
// event). The cursor only moves forward (GREATEST), in the same transaction.
import { emailStatusOf, recipientStatusAfter } from '../../../common/status.js';
import type { AppliedEvent, DeliveryLog, GatewayEvent } from '../index.js';
import type { PgDb, Tx } from './db.js';
import { Fanout, type WebhookCache } from './fanout.js';
import { columnsOf } from './rows.js';

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
      const fresh = events.filter((ev) => ev.seq > cursor);
      if (!fresh.length) return [];
      const emails = await this.lock(
        tx,
        fresh.filter((ev) => ev.emailId).map((ev) => ev.emailId),
      );
      const named = fresh.filter((ev) => {
        const email = emails.get(ev.emailId);
        return email !== undefined && nameRecipient(ev, email);
      });
      const recorded = await this.record(tx, named);
      const fanout = new Fanout(tx, this.hooks);
      const writes = new ChunkWrites();
      const applied: AppliedEvent[] = [];
      for (const ev of named) {
        // Only the first of the chunk's events with a key is new; the rest repeat it.
        if (!recorded.delete(eventKey(ev))) continue;
        applied.push(await this.applyOne(fanout, writes, ev, emails.get(ev.emailId)!));
      }
      await writes.flush(tx);
      await tx.query(
        'INSERT INTO gateway_cursors (gateway, seq) VALUES ($1, $2) ON CONFLICT (gateway) DO UPDATE SET seq = GREATEST(gateway_cursors.seq, excluded.seq)',
        [gateway, Math.max(...fresh.map((ev) => ev.seq))],
      );
      await fanout.flush();
      return applied;
    }, events.length);
  }

  /**
   * The chunk's emails, locked in id order (a fixed order: two nodes applying the same run cannot
   * deadlock), then their recipients read in a statement of its own: under READ COMMITTED a
   * statement reads what was committed when it began, so recipients read by the statement that
   * waited for the lock would miss what the node holding it wrote. Two round trips for the chunk
   * instead of one per event; applyOne keeps each email's state as it changes it, for the chunk's
   * later events.
   */
  private async lock(tx: Tx, ids: string[]): Promise<Map<string, LockedEmail>> {
    if (!ids.length) return new Map();
    const unique = [...new Set(ids)];
    const locked = await tx.query<Omit<LockedEmail, 'recipients'> & { id: string }>(
      `SELECT id, project_id, status, bulk, reached, from_addr, subject, created_at
       FROM emails WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`,
      [unique],
    );
    const emails = new Map<string, LockedEmail>(locked.rows.map((row) => [row.id, { ...row, recipients: [] }]));
    const recipients = await tx.query<{ email_id: string; address: string; status: string }>(
      'SELECT email_id, address, status FROM email_recipients WHERE email_id = ANY($1::text[]) ORDER BY email_id, position',
      [unique],
    );
    for (const r of recipients.rows) emails.get(r.email_id)?.recipients.push({ address: r.address, status: r.status });
    return emails;
  }

  /** Inserts the chunk's events in one statement; the keys of those that were not recorded before. */
  private async record(tx: Tx, events: GatewayEvent[]): Promise<Set<string>> {
    if (!events.length) return new Set();
    const r = await tx.query<EventKey>(
      `INSERT INTO email_events (email_id, type, recipient, attempt, at, details, dedupe)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::bigint[], $6::jsonb[], $7::text[])
       ON CONFLICT DO NOTHING RETURNING email_id, type, recipient, attempt, dedupe`,
      columnsOf(
        events.map((ev) => [ev.emailId, ev.type, ev.recipient, ev.attempt, ev.at, JSON.stringify(ev.details) ?? null, ev.dedupe ?? '']),
        7,
      ),
    );
    return new Set(
      r.rows.map((row) => eventKey({ emailId: row.email_id, type: row.type, recipient: row.recipient, attempt: row.attempt, dedupe: row.dedupe })),
    );
  }

  /** Moves the email and its recipients through the status machine (in memory; `writes` writes the end state). */
  private async applyOne(fanout: Fanout, writes: ChunkWrites, ev: GatewayEvent, email: LockedEmail): Promise<AppliedEvent> {
    const projectId = email.project_id;
    for (const r of email.recipients) {
      if (ev.recipient && r.address !== ev.recipient) continue;
      // Unsubscribes, and complaints about bulk mail, stop the project's bulk mail to the address.
      if (ev.type === 'unsubscribed' || (ev.type === 'complained' && email.bulk)) writes.suppress(projectId, r.address, ev.type, 'bulk', ev.emailId, ev.at);
      const next = recipientStatusAfter(r.status, ev.type);
      if (!next) continue;
      r.status = next;
      writes.recipient(ev.emailId, r.address, next, ev.at);
      if (next === 'bounced') writes.suppress(projectId, r.address, 'bounced', 'all', ev.emailId, ev.at);
    }
    const emailStatus = emailStatusOf(email.recipients.map((r) => r.status));
    if (emailStatus !== email.status || ev.type === 'deferred') {
      const source = { id: ev.emailId, projectId, from: email.from_addr, subject: email.subject, createdAt: email.created_at };
      email.reached = await fanout.reach(source, email.reached, emailStatus, ev.at, {
        type: ev.type,
        at: ev.at,
        ...(ev.recipient ? { recipient: ev.recipient } : {}),
        attempt: ev.attempt,
        ...ev.details,
      });
    }
    email.status = emailStatus;
    writes.email(ev.emailId, emailStatus, ev.at, email.reached);
    return { ...ev, emailStatus, projectId };
  }
}

interface EventKey {
  email_id: string;
  type: string;
  recipient: string;
  attempt: number;
  dedupe: string;
}

/** The unique key of email_events: an event with the key of one recorded before repeats it. */
const eventKey = (ev: Pick<GatewayEvent, 'emailId' | 'type' | 'recipient' | 'attempt' | 'dedupe'>): string =>
  JSON.stringify([ev.emailId, ev.type, ev.recipient, ev.attempt, ev.dedupe ?? '']);

/** Names the recipient of a report that gave its position; false when the email has no such recipient. */
function nameRecipient(ev: GatewayEvent, email: LockedEmail): boolean {
  if (ev.recipientIndex === undefined || ev.recipient) return true;
  if (ev.soleRecipient && email.recipients.length !== 1) return false;
  const named = email.recipients[ev.recipientIndex];
  if (!named) return false;
  ev.recipient = named.address;
  return true;
}

/**
 * What a chunk's events change, kept as the end state and written in one statement per table (the
 * same rows the events, applied one by one, would have left): a recipient's and an email's last
 * status; suppressions in the order the events gave them, each address once per kind (a bounce's
 * scope `all` overrides an unsubscribe's `bulk` whichever came first).
 */
class ChunkWrites {
  private readonly recipients = new Map<string, [string, string, string, number]>();
  private readonly emails = new Map<string, [string, string, number, string]>();
  private readonly bulk = new Map<string, [string, string, string, string, number]>();
  private readonly all = new Map<string, [string, string, string, string, number]>();

  recipient(emailId: string, address: string, status: string, at: number): void {
    this.recipients.set(JSON.stringify([emailId, address]), [emailId, address, status, at]);
  }

  email(id: string, status: string, at: number, reached: string): void {
    this.emails.set(id, [id, status, at, reached]);
  }

  suppress(projectId: string, address: string, reason: string, scope: 'bulk' | 'all', emailId: string, at: number): void {
    const list = scope === 'all' ? this.all : this.bulk;
    const key = JSON.stringify([projectId, address]);
    if (!list.has(key)) list.set(key, [projectId, address, reason, emailId, at]);
  }

  async flush(tx: Tx): Promise<void> {
    if (this.bulk.size) {
      await tx.query(
        `INSERT INTO suppressions (project_id, address, reason, scope, email_id, created_at)
         SELECT p, a, r, 'bulk', e, at FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) AS x(p, a, r, e, at)
         ON CONFLICT (project_id, address) DO NOTHING`,
        columnsOf(this.bulk.values(), 5),
      );
    }
    if (this.all.size) {
      await tx.query(
        `INSERT INTO suppressions (project_id, address, reason, scope, email_id, created_at)
         SELECT p, a, r, 'all', e, at FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) AS x(p, a, r, e, at)
         ON CONFLICT (project_id, address) DO UPDATE SET scope = 'all', reason = excluded.reason, email_id = excluded.email_id, created_at = excluded.created_at
         WHERE suppressions.scope <> 'all'`,
        columnsOf(this.all.values(), 5),
      );
    }
    if (this.recipients.size) {
      await tx.query(
        `UPDATE email_recipients r SET status = x.s, updated_at = x.at
         FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS x(e, a, s, at) WHERE r.email_id = x.e AND r.address = x.a`,
        columnsOf(this.recipients.values(), 4),
      );
    }
    if (this.emails.size) {
      await tx.query(
        `UPDATE emails m SET status = x.s, updated_at = x.at, reached = x.r
         FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[]) AS x(id, s, at, r) WHERE m.id = x.id`,
        columnsOf(this.emails.values(), 4),
      );
    }
  }
}
