// Open and click tracking in SQLite: a batch of hits in one write of the group; what they change is
// the lifecycle's (control/mail/lifecycle.ts track).
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import { addChanges, eventKey, type LoadedEmail, track, trackedNotices } from '../../mail/lifecycle.js';
import type { Tracking, TrackingCountRow, TrackingHit, WebhookRow } from '../index.js';
import type { SqliteChanges } from './changes.js';
import { toLoadedEmail } from './rows.js';

export class SqliteTracking implements Tracking {
  private readonly q;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
    private readonly changes: SqliteChanges,
  ) {
    this.q = {
      email: db.prepare('SELECT id, project_id, status, bulk, reached, from_addr, subject, created_at FROM emails WHERE id = ?'),
      insertEvent: db.prepare('INSERT OR IGNORE INTO email_events (email_id, type, recipient, attempt, at, details, dedupe) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      seen: db.prepare('SELECT kind FROM email_tracking WHERE email_id = ? AND count > bots GROUP BY kind').pluck(),
      counts: db.prepare('SELECT kind, link, count, bots, first_at, last_at FROM email_tracking WHERE email_id = ? ORDER BY kind DESC, first_at, link'),
    };
  }

  record(hits: TrackingHit[]): Promise<void> {
    if (!hits.length) return Promise.resolve();
    return this.writer.run(() => {
      const emails = new Map<string, LoadedEmail>();
      const hooks = new Map<string, WebhookRow[]>();
      const seen = new Set<string>();
      for (const id of new Set(hits.map((h) => h.emailId))) {
        const r = this.q.email.get(id) as { project_id: string } | undefined;
        if (!r) continue;
        emails.set(id, toLoadedEmail(r, []));
        hooks.set(r.project_id, this.changes.hooksOf(r.project_id));
        for (const kind of this.q.seen.all(id) as string[]) seen.add(`${id}|${kind}`);
      }
      const { outcome, changes } = track({ emails, hooks, seen }, hits);
      // The log's key tells a new event from one an earlier batch recorded this minute: only a new one is sent.
      const recorded = new Set<string>();
      for (const { event: ev } of outcome)
        if (this.q.insertEvent.run(ev.emailId, ev.type, ev.recipient, ev.attempt, ev.at, JSON.stringify(ev.details), ev.dedupe).changes)
          recorded.add(eventKey(ev));
      addChanges(changes, trackedNotices(outcome, recorded));
      this.changes.write(changes);
    }, false);
  }

  async counts(emailId: string): Promise<TrackingCountRow[]> {
    return (this.q.counts.all(emailId) as any[]).map((r) => ({
      kind: r.kind,
      link: r.link,
      count: r.count,
      bots: r.bots,
      firstAt: r.first_at,
      lastAt: r.last_at,
    }));
  }
}
