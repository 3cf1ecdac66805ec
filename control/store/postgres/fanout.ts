// What follows an email's status change, inside the change's own transaction: the status
// is counted once per email in the daily analytics, and a message is queued for every
// webhook of the project that wants it (control/webhooks/payload.ts says what). Counts
// are summed per transaction and written once, in key order, at its end: one statement,
// and two nodes' transactions lock the counter rows in the same order (no deadlock).
import crypto from 'node:crypto';
import { dayOf } from '../../../core/clock.js';
import { webhookPayload, wantsEvent } from '../../webhooks/payload.js';
import type { ProjectCache } from '../cache.js';
import type { WebhookRow } from '../index.js';
import type { Tx } from './db.js';
import { toWebhook } from './rows.js';

/** A project's webhooks, cached per node (a write publishes the project on the invalidator). */
export type WebhookCache = ProjectCache<Promise<WebhookRow[]>>;

/**
 * What a webhook message says about the email. Without `request` (its bodies make it large) it is read
 * only when some webhook wants the change, at flush, in one query for every such email of the transaction.
 */
export interface FanoutEmail {
  id: string;
  projectId: string;
  from: string;
  subject: string;
  createdAt: number;
  request?: string;
}

interface Notice {
  email: FanoutEmail;
  status: string;
  at: number;
  event: Record<string, unknown>;
  hooks: WebhookRow[];
}

/** Adds `n` to counter rows (analytics_daily, usage_daily, …) in key order; `keys` name the key columns. */
export async function addCounts(tx: Tx, table: string, keys: string[], counts: Map<string, { key: string[]; n: number }>): Promise<void> {
  const list = [...counts.entries()].filter(([, v]) => v.n !== 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (!list.length) return;
  const columns = keys.map((_, i) => list.map(([, v]) => v.key[i]!));
  const casts = keys.map((_, i) => `$${i + 1}::text[]`).join(', ');
  await tx.query(
    `INSERT INTO ${table} (${keys.join(', ')}, count) SELECT * FROM unnest(${casts}, $${keys.length + 1}::int[])
     ON CONFLICT (${keys.join(', ')}) DO UPDATE SET count = ${table}.count + excluded.count`,
    [...columns, list.map(([, v]) => v.n)],
  );
}

export class Fanout {
  private readonly counts = new Map<string, { key: string[]; n: number }>();
  private readonly deliveries: Array<[string, string, string, string, number]> = [];
  /** Changes webhooks want of emails whose request is read at flush. */
  private readonly unread: Notice[] = [];

  constructor(
    private readonly tx: Tx,
    private readonly hooks: WebhookCache,
  ) {}

  count(projectId: string, day: string, status: string): void {
    const k = `${projectId}|${day}|${status}`;
    const c = this.counts.get(k);
    if (c) c.n++;
    else this.counts.set(k, { key: [projectId, day, status], n: 1 });
  }

  /** An email reached a status: counted once per status (`reached` is what it had reached before), and queued for the webhooks that want it. */
  async reach(email: FanoutEmail, reached: string, status: string, at: number, event: Record<string, unknown>): Promise<string> {
    const list = reached ? reached.split(',') : [];
    if (!list.includes(status)) {
      list.push(status);
      this.count(email.projectId, dayOf(at), status);
    }
    await this.notify(email, status, at, event);
    return list.join(',');
  }

  /** Queues the change for every webhook of the project that wants it. */
  async notify(email: FanoutEmail, status: string, at: number, event: Record<string, unknown>): Promise<void> {
    const hooks = (await this.webhooksOf(email.projectId)).filter((w) => wantsEvent(w, status, event));
    if (!hooks.length) return;
    if (email.request === undefined) this.unread.push({ email, status, at, event, hooks });
    else this.queue({ email, status, at, event, hooks }, email.request);
  }

  private queue(n: Notice, request: string): void {
    const req = JSON.parse(request) as { to: string[]; tags: string[] };
    const { email } = n;
    const payload = webhookPayload(
      { id: email.id, from: email.from, to: req.to, subject: email.subject, tags: req.tags, createdAt: email.createdAt },
      n.status,
      n.at,
      n.event,
    );
    for (const w of n.hooks) this.deliveries.push([`msg_${crypto.randomUUID().replace(/-/g, '')}`, w.id, email.projectId, payload, n.at]);
  }

  private webhooksOf(projectId: string): Promise<WebhookRow[]> {
    // Read on this transaction's connection: asking the pool for another while holding one could wait on itself.
    const list = this.hooks.get(projectId, () =>
      this.tx.query('SELECT * FROM webhooks WHERE project_id = $1 ORDER BY created_at, id', [projectId]).then((r) => r.rows.map(toWebhook)),
    );
    list.catch(() => this.hooks.clear());
    return list;
  }

  /** Writes what the transaction collected; call last, just before the commit. */
  async flush(): Promise<void> {
    if (this.unread.length) {
      const ids = [...new Set(this.unread.map((n) => n.email.id))];
      const r = await this.tx.query<{ id: string; request: string }>('SELECT id, request FROM emails WHERE id = ANY($1::text[])', [ids]);
      const requests = new Map(r.rows.map((row) => [row.id, row.request]));
      for (const n of this.unread) this.queue(n, requests.get(n.email.id)!);
      this.unread.length = 0;
    }
    if (this.deliveries.length) {
      const d = this.deliveries;
      await this.tx.query(
        `INSERT INTO webhook_deliveries (id, webhook_id, project_id, payload, attempt, next_attempt_at, status, created_at)
         SELECT id, w, p, payload, 0, at, 'pending', at FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) AS x(id, w, p, payload, at)`,
        [d.map((x) => x[0]), d.map((x) => x[1]), d.map((x) => x[2]), d.map((x) => x[3]), d.map((x) => x[4])],
      );
      d.length = 0;
    }
    await addCounts(this.tx, 'analytics_daily', ['project_id', 'day', 'status'], this.counts);
    this.counts.clear();
  }
}
