// Delivery events from the gateways, on PostgreSQL. Every control node reads every
// gateway's stream, so the same run may be applied by several nodes at once: an event is
// recorded by whichever inserts it first (unique key, ON CONFLICT DO NOTHING), and only
// that node applies it (the lifecycle's applyEvents: control/mail/lifecycle.ts). The
// email rows are locked first, so two nodes applying the same run take turns per email.
// A chunk of events is written set-based: its events in one insert, then its changes in
// one statement per table (changes.ts): a round trip per table, not three per event.
// The cursor only moves forward (GREATEST), in the same transaction.
import { applyEvents, emailsToLoad, eventKey, type LoadedEmail, toRecord } from '../../mail/lifecycle.js';
import type { AppliedEvent, DeliveryLog, GatewayEvent } from '../index.js';
import { hooksOf, type WebhookCache, writeChanges } from './changes.js';
import type { PgDb, Tx } from './db.js';
import { columnsOf, LOADED_COLUMNS, withRecipients } from './rows.js';

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
      const emails = await this.lock(tx, emailsToLoad(events, cursor));
      const record = toRecord(events, cursor, emails);
      if (record.cursor === undefined) return [];
      const recorded = await this.record(tx, record.events);
      const hooks = await hooksOf(
        tx,
        this.hooks,
        [...emails.values()].map((e) => e.projectId),
      );
      const { outcome, changes } = applyEvents({ emails, hooks }, record.events, recorded);
      await writeChanges(tx, changes);
      await tx.query(
        'INSERT INTO gateway_cursors (gateway, seq) VALUES ($1, $2) ON CONFLICT (gateway) DO UPDATE SET seq = GREATEST(gateway_cursors.seq, excluded.seq)',
        [gateway, record.cursor],
      );
      return outcome;
    }, events.length);
  }

  /**
   * The chunk's emails, locked in id order (a fixed order: two nodes applying the same run cannot
   * deadlock), then their recipients (withRecipients). Two round trips for the chunk instead of one per event.
   */
  private async lock(tx: Tx, ids: string[]): Promise<Map<string, LoadedEmail>> {
    if (!ids.length) return new Map();
    const locked = await tx.query<{ id: string }>(`SELECT ${LOADED_COLUMNS} FROM emails WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`, [ids]);
    return new Map((await withRecipients(tx, locked.rows)).map((e) => [e.id, e]));
  }

  /** Inserts the chunk's events in one statement; the keys of those that were not recorded before. */
  private async record(tx: Tx, events: GatewayEvent[]): Promise<Set<string>> {
    if (!events.length) return new Set();
    const r = await tx.query<{ email_id: string; type: GatewayEvent['type']; recipient: string; attempt: number; dedupe: string }>(
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
}
