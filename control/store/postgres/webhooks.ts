// Webhook endpoints and their queued messages on PostgreSQL. The endpoint list is read
// on every status change (changes.ts hooksOf): cached per project, and every change publishes the
// project's id once committed. Several nodes send from one queue: due() claims what it
// returns for a lease, like undispatched emails (emails.ts), so a message is posted by
// one node at a time.
import type { Invalidator } from '../../../core/invalidation.js';
import { STORE_CHANNELS } from '../cache.js';
import { DELIVERY_SCAN, type WebhookChange, type WebhookDelivery, type WebhookRow, type Webhooks } from '../index.js';
import type { PgDb, Tx } from './db.js';
import { DB_NOW, toDelivery, toWebhook } from './rows.js';

/** Longer than one round of posts takes (each is bounded by webhooks.timeoutMs). */
const CLAIM_MS = 60_000;

export class PgWebhooks implements Webhooks {
  constructor(
    private readonly db: PgDb,
    private readonly invalidator: Invalidator,
    private readonly node: string,
  ) {}

  private changed(tx: Tx, projectId: string): void {
    tx.afterCommit(() => this.invalidator.publish(STORE_CHANNELS.webhooks, projectId));
  }

  create(w: Omit<WebhookRow, 'enabled'> & { enabled?: boolean }): Promise<void> {
    return this.db.tx(async (tx) => {
      await tx.query('INSERT INTO webhooks (id, project_id, url, statuses, secret, created_at, enabled) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
        w.id,
        w.projectId,
        w.url,
        JSON.stringify(w.statuses),
        w.secret,
        w.createdAt,
        w.enabled !== false,
      ]);
      this.changed(tx, w.projectId);
    });
  }

  update(projectId: string, id: string, change: WebhookChange): Promise<WebhookRow | undefined> {
    return this.db.tx(async (tx) => {
      const r = (await tx.query('SELECT * FROM webhooks WHERE id = $1 AND project_id = $2 FOR UPDATE', [id, projectId])).rows[0];
      if (!r) return undefined;
      const w = { ...toWebhook(r), ...change };
      await tx.query('UPDATE webhooks SET url = $1, statuses = $2, secret = $3, enabled = $4 WHERE id = $5', [
        w.url,
        JSON.stringify(w.statuses),
        w.secret,
        w.enabled,
        id,
      ]);
      // A disabled endpoint's queue would otherwise be retried for a day to no one who wants it.
      if (!w.enabled) {
        await tx.query("UPDATE webhook_deliveries SET status = 'failed', last_error = 'endpoint disabled' WHERE webhook_id = $1 AND status = 'pending'", [id]);
      }
      this.changed(tx, projectId);
      return w;
    });
  }

  async list(projectId: string): Promise<WebhookRow[]> {
    return (await this.db.query('SELECT * FROM webhooks WHERE project_id = $1 ORDER BY created_at, id', [projectId])).rows.map(toWebhook);
  }

  async get(projectId: string, id: string): Promise<WebhookRow | undefined> {
    const r = (await this.db.query('SELECT * FROM webhooks WHERE id = $1 AND project_id = $2', [id, projectId])).rows[0];
    return r ? toWebhook(r) : undefined;
  }

  async byId(id: string): Promise<WebhookRow | undefined> {
    const r = (await this.db.query('SELECT * FROM webhooks WHERE id = $1', [id])).rows[0];
    return r ? toWebhook(r) : undefined;
  }

  remove(projectId: string, id: string): Promise<boolean> {
    return this.db.tx(async (tx) => {
      const gone = (await tx.query('DELETE FROM webhooks WHERE id = $1 AND project_id = $2', [id, projectId])).rowCount > 0;
      if (gone) {
        await tx.query("UPDATE webhook_deliveries SET status = 'failed', last_error = 'endpoint deleted' WHERE webhook_id = $1 AND status = 'pending'", [id]);
        this.changed(tx, projectId);
      }
      return gone;
    });
  }

  async due(now: number, limit: number): Promise<WebhookDelivery[]> {
    const r = await this.db.query(
      `UPDATE webhook_deliveries SET claimed_until = ${DB_NOW} + ${CLAIM_MS}, claimed_by = $1
       WHERE id IN (
         SELECT id FROM webhook_deliveries
         WHERE status = 'pending' AND next_attempt_at <= $2
           AND (claimed_until IS NULL OR claimed_until < ${DB_NOW} OR claimed_by = $1)
         ORDER BY next_attempt_at LIMIT $3
         FOR UPDATE SKIP LOCKED)
       RETURNING *`,
      [this.node, now, limit],
    );
    return r.rows.sort((a: any, b: any) => a.next_attempt_at - b.next_attempt_at).map(toDelivery);
  }

  async nextDueAt(): Promise<number | null> {
    return (
      (await this.db.query<{ at: number | null }>("SELECT MIN(next_attempt_at) AS at FROM webhook_deliveries WHERE status = 'pending'")).rows[0]?.at ?? null
    );
  }

  async recordAttempt(
    id: string,
    status: WebhookDelivery['status'],
    attempt: number,
    nextAttemptAt: number,
    lastError: string | null,
    deliveredAt: number | null,
  ): Promise<void> {
    await this.db.query(
      `UPDATE webhook_deliveries SET status = $1, attempt = $2, next_attempt_at = $3, last_error = $4, delivered_at = $5,
         claimed_until = NULL, claimed_by = NULL WHERE id = $6`,
      [status, attempt, nextAttemptAt, lastError, deliveredAt, id],
    );
  }

  async deliveries(webhookId: string, limit = 50, status?: WebhookDelivery['status']): Promise<WebhookDelivery[]> {
    if (!status) {
      return (await this.db.query('SELECT * FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY created_at DESC LIMIT $2', [webhookId, limit])).rows.map(
        toDelivery,
      );
    }
    // The latest DELIVERY_SCAN by webhook_deliveries_webhook, then the rows of those that match: no payload read for the others.
    const r = await this.db.query(
      `SELECT * FROM webhook_deliveries WHERE id IN (
         SELECT id FROM (SELECT id, status, created_at FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY created_at DESC LIMIT ${DELIVERY_SCAN}) AS latest
         WHERE status = $2 ORDER BY created_at DESC LIMIT $3)
       ORDER BY created_at DESC`,
      [webhookId, status, limit],
    );
    return r.rows.map(toDelivery);
  }

  async all(): Promise<WebhookRow[]> {
    return (await this.db.query('SELECT * FROM webhooks ORDER BY created_at, id')).rows.map(toWebhook);
  }

  async recent(webhookId: string, n: number): Promise<Record<WebhookDelivery['status'], number>> {
    const r = await this.db.query<{ status: WebhookDelivery['status']; n: number }>(
      'SELECT status, COUNT(*) AS n FROM (SELECT status FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY created_at DESC LIMIT $2) AS latest GROUP BY status',
      [webhookId, n],
    );
    const out = { pending: 0, delivered: 0, failed: 0 };
    for (const x of r.rows) out[x.status] = x.n;
    return out;
  }

  async delivery(id: string): Promise<WebhookDelivery | undefined> {
    const r = (await this.db.query('SELECT * FROM webhook_deliveries WHERE id = $1', [id])).rows[0];
    return r ? toDelivery(r) : undefined;
  }

  /** A claim (another node posting it now) is left alone: that node's recordAttempt comes after, and an idle claim lapses. */
  async retryNow(id: string, now: number): Promise<WebhookDelivery | undefined> {
    const r = await this.db.query(
      "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = $1 WHERE id = $2 AND status IN ('pending', 'failed') RETURNING *",
      [now, id],
    );
    return r.rows[0] ? toDelivery(r.rows[0]) : undefined;
  }

  /** Gives up this node's claims (closing). */
  async releaseClaims(): Promise<void> {
    await this.db.query("UPDATE webhook_deliveries SET claimed_until = NULL, claimed_by = NULL WHERE claimed_by = $1 AND status = 'pending'", [this.node]);
  }
}
