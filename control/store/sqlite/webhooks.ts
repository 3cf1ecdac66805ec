// Webhook endpoints and their queued messages in SQLite. The endpoint list is read
// on every status change (changes.ts hooksOf): cached per project, and every change
// publishes the project's id.
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import type { Invalidator } from '../../../core/invalidation.js';
import { STORE_CHANNELS } from '../cache.js';
import { DELIVERY_SCAN, type WebhookChange, type WebhookDelivery, type WebhookRow, type Webhooks } from '../index.js';
import { toDelivery, toWebhook } from './rows.js';

export class SqliteWebhooks implements Webhooks {
  private readonly q;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
    private readonly invalidator: Invalidator,
  ) {
    this.q = {
      insert: db.prepare(
        'INSERT INTO webhooks (id, project_id, url, statuses, secret, created_at, enabled) VALUES (@id, @projectId, @url, @statuses, @secret, @createdAt, @enabled)',
      ),
      list: db.prepare('SELECT * FROM webhooks WHERE project_id = ? ORDER BY created_at, id'),
      get: db.prepare('SELECT * FROM webhooks WHERE id = ? AND project_id = ?'),
      byId: db.prepare('SELECT * FROM webhooks WHERE id = ?'),
      update: db.prepare(
        'UPDATE webhooks SET url = @url, statuses = @statuses, secret = @secret, enabled = @enabled WHERE id = @id AND project_id = @projectId',
      ),
      remove: db.prepare('DELETE FROM webhooks WHERE id = ? AND project_id = ?'),
      dropDeliveries: db.prepare("UPDATE webhook_deliveries SET status = 'failed', last_error = ? WHERE webhook_id = ? AND status = 'pending'"),
      due: db.prepare("SELECT * FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?"),
      nextDue: db.prepare("SELECT MIN(next_attempt_at) FROM webhook_deliveries WHERE status = 'pending'").pluck(),
      updateDelivery: db.prepare('UPDATE webhook_deliveries SET status = ?, attempt = ?, next_attempt_at = ?, last_error = ?, delivered_at = ? WHERE id = ?'),
      deliveries: db.prepare('SELECT * FROM webhook_deliveries WHERE webhook_id = ? ORDER BY created_at DESC LIMIT ?'),
      // The latest DELIVERY_SCAN ids by webhook_deliveries_webhook, then their rows: no payload read for the skipped ones.
      deliveriesOf: db.prepare(`SELECT * FROM webhook_deliveries WHERE id IN (
          SELECT id FROM (SELECT id, status, created_at FROM webhook_deliveries WHERE webhook_id = ? ORDER BY created_at DESC LIMIT ${DELIVERY_SCAN})
          WHERE status = ? ORDER BY created_at DESC LIMIT ?)
        ORDER BY created_at DESC`),
      all: db.prepare('SELECT * FROM webhooks ORDER BY created_at, id'),
      recent: db.prepare(
        'SELECT status, COUNT(*) AS n FROM (SELECT status FROM webhook_deliveries WHERE webhook_id = ? ORDER BY created_at DESC LIMIT ?) GROUP BY status',
      ),
      delivery: db.prepare('SELECT * FROM webhook_deliveries WHERE id = ?'),
      retry: db.prepare("UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ? WHERE id = ? AND status IN ('pending', 'failed')"),
    };
  }

  /** Inside the write, like domains.ts: nothing reads between this and the commit. */
  private changed(projectId: string): void {
    this.invalidator.publish(STORE_CHANNELS.webhooks, projectId);
  }

  create(w: Omit<WebhookRow, 'enabled'> & { enabled?: boolean }): Promise<void> {
    return this.writer.run(() => {
      this.q.insert.run({ ...w, statuses: JSON.stringify(w.statuses), enabled: w.enabled === false ? 0 : 1 });
      this.changed(w.projectId);
    });
  }

  update(projectId: string, id: string, change: WebhookChange): Promise<WebhookRow | undefined> {
    return this.writer.run(() => {
      const r = this.q.get.get(id, projectId);
      if (!r) return undefined;
      const w = { ...toWebhook(r), ...change };
      this.q.update.run({ ...w, statuses: JSON.stringify(w.statuses), enabled: w.enabled ? 1 : 0 });
      // A disabled endpoint's queue would otherwise be retried for a day to no one who wants it.
      if (!w.enabled) this.q.dropDeliveries.run('endpoint disabled', id);
      this.changed(projectId);
      return w;
    });
  }

  async list(projectId: string): Promise<WebhookRow[]> {
    return this.q.list.all(projectId).map(toWebhook);
  }

  async get(projectId: string, id: string): Promise<WebhookRow | undefined> {
    const r = this.q.get.get(id, projectId);
    return r ? toWebhook(r) : undefined;
  }

  async byId(id: string): Promise<WebhookRow | undefined> {
    const r = this.q.byId.get(id);
    return r ? toWebhook(r) : undefined;
  }

  remove(projectId: string, id: string): Promise<boolean> {
    return this.writer.run(() => {
      const gone = this.q.remove.run(id, projectId).changes > 0;
      if (gone) {
        this.q.dropDeliveries.run('endpoint deleted', id);
        this.changed(projectId);
      }
      return gone;
    });
  }

  async due(now: number, limit: number): Promise<WebhookDelivery[]> {
    return this.q.due.all(now, limit).map(toDelivery);
  }

  async nextDueAt(): Promise<number | null> {
    return (this.q.nextDue.get() as number | null) ?? null;
  }

  recordAttempt(
    id: string,
    status: WebhookDelivery['status'],
    attempt: number,
    nextAttemptAt: number,
    lastError: string | null,
    deliveredAt: number | null,
  ): Promise<void> {
    return this.writer.run(() => void this.q.updateDelivery.run(status, attempt, nextAttemptAt, lastError, deliveredAt, id));
  }

  async deliveries(webhookId: string, limit = 50, status?: WebhookDelivery['status']): Promise<WebhookDelivery[]> {
    return (status ? this.q.deliveriesOf.all(webhookId, status, limit) : this.q.deliveries.all(webhookId, limit)).map(toDelivery);
  }

  async all(): Promise<WebhookRow[]> {
    return this.q.all.all().map(toWebhook);
  }

  async recent(webhookId: string, n: number): Promise<Record<WebhookDelivery['status'], number>> {
    const out = { pending: 0, delivered: 0, failed: 0 };
    for (const r of this.q.recent.all(webhookId, n) as Array<{ status: WebhookDelivery['status']; n: number }>) out[r.status] = r.n;
    return out;
  }

  async delivery(id: string): Promise<WebhookDelivery | undefined> {
    const r = this.q.delivery.get(id);
    return r ? toDelivery(r) : undefined;
  }

  retryNow(id: string, now: number): Promise<WebhookDelivery | undefined> {
    return this.writer.run(() => {
      if (!this.q.retry.run(now, id).changes) return undefined;
      return toDelivery(this.q.delivery.get(id));
    });
  }
}
