// Open and click tracking on PostgreSQL: a batch of hits in one transaction; what they change is the
// lifecycle's (control/mail/lifecycle.ts track). The emails are read, not locked: a hit changes no
// email row, and the counts are added by upserts that commute.
import { addChanges, eventKey, type LoadedEmail, track, trackedNotices } from '../../mail/lifecycle.js';
import type { Tracking, TrackingCountRow, TrackingHit } from '../index.js';
import { hooksOf, type WebhookCache, writeChanges } from './changes.js';
import type { PgDb } from './db.js';
import { columnsOf, LOADED_COLUMNS, toLoadedEmail } from './rows.js';

export class PgTracking implements Tracking {
  constructor(
    private readonly db: PgDb,
    private readonly hooks: WebhookCache,
  ) {}

  record(hits: TrackingHit[]): Promise<void> {
    if (!hits.length) return Promise.resolve();
    const ids = [...new Set(hits.map((h) => h.emailId))];
    return this.db.tx(async (tx) => {
      const rows = await tx.query<{ id: string; project_id: string }>(`SELECT ${LOADED_COLUMNS} FROM emails WHERE id = ANY($1::text[])`, [ids]);
      const emails = new Map<string, LoadedEmail>(rows.rows.map((r) => [r.id, toLoadedEmail(r, [])]));
      const seenRows = await tx.query<{ email_id: string; kind: string }>(
        'SELECT DISTINCT email_id, kind FROM email_tracking WHERE email_id = ANY($1::text[]) AND count > bots',
        [ids],
      );
      const seen = new Set(seenRows.rows.map((r) => `${r.email_id}|${r.kind}`));
      const hooks = await hooksOf(
        tx,
        this.hooks,
        [...emails.values()].map((e) => e.projectId),
      );
      const { outcome, changes } = track({ emails, hooks, seen }, hits);
      // The log's key tells a new event from one an earlier batch recorded this minute: only a new one is sent.
      const recorded = new Set<string>();
      if (outcome.length) {
        const r = await tx.query<{ email_id: string; type: 'opened'; recipient: string; attempt: number; dedupe: string }>(
          `INSERT INTO email_events (email_id, type, recipient, attempt, at, details, dedupe)
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::bigint[], $6::jsonb[], $7::text[])
           ON CONFLICT DO NOTHING RETURNING email_id, type, recipient, attempt, dedupe`,
          columnsOf(
            // In the hits' order, so the log reads in time order; two nodes' batches that meet on an entry in
            // opposite orders may deadlock: PostgreSQL ends one, and its recorder writes the batch again.
            outcome.map(({ event: ev }) => [ev.emailId, ev.type, ev.recipient, ev.attempt, ev.at, JSON.stringify(ev.details), ev.dedupe]),
            7,
          ),
        );
        for (const row of r.rows)
          recorded.add(eventKey({ emailId: row.email_id, type: row.type, recipient: row.recipient, attempt: row.attempt, dedupe: row.dedupe }));
      }
      addChanges(changes, trackedNotices(outcome, recorded));
      await writeChanges(tx, changes);
    }, hits.length);
  }

  async counts(emailId: string): Promise<TrackingCountRow[]> {
    const r = await this.db.query(
      'SELECT kind, link, count, bots, first_at, last_at FROM email_tracking WHERE email_id = $1 ORDER BY kind DESC, first_at, link',
      [emailId],
    );
    return r.rows.map((x: any) => ({ kind: x.kind, link: x.link, count: x.count, bots: x.bots, firstAt: Number(x.first_at), lastAt: Number(x.last_at) }));
  }
}
