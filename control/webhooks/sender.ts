// Delivers queued webhook messages. Each message is a row written in the same
// transaction as the status change it reports, so none is lost across a
// restart; failures are retried with growing delays for up to a day.
import type { Logger } from '../../core/log.js';
import { clock } from '../../core/clock.js';
import type { Sealer } from '../../core/crypto.js';
import type { WebhookSettings } from '../../core/config.js';
import type { Store, WebhookDelivery } from '../store/index.js';
import { sign } from './signature.js';
import { failureOf, type WebhookTargets } from './target.js';

const BATCH = 50;
const POLL_MS = 500;

export class WebhookSender {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly sealer: Sealer,
    private readonly settings: WebhookSettings,
    private readonly targets: WebhookTargets,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), ms);
    this.timer.unref();
  }

  /** The last poll failed: logged once until one succeeds. */
  private failing = false;

  private async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      for (;;) {
        const due = await this.store.webhooks.due(clock.now(), BATCH);
        if (this.failing) {
          this.failing = false;
          this.log.info('webhook delivery loop running again');
        }
        if (!due.length || this.stopped) break;
        await Promise.all(due.map((d) => this.deliver(d)));
      }
    } catch (err) {
      // Once per outage (a network database lost), not every poll.
      if (!this.failing) this.log.error({ err }, 'webhook delivery loop failed; retrying');
      this.failing = true;
    } finally {
      this.running = false;
      this.schedule(POLL_MS);
    }
  }

  private async deliver(d: WebhookDelivery): Promise<void> {
    const hook = await this.store.webhooks.byId(d.webhookId);
    const now = clock.now();
    if (!hook) return this.store.webhooks.recordAttempt(d.id, 'failed', d.attempt, now, 'endpoint deleted', null);
    // Queued from a list read just before the endpoint was disabled (another node's cache).
    if (!hook.enabled) return this.store.webhooks.recordAttempt(d.id, 'failed', d.attempt, now, 'endpoint disabled', null);
    const ts = Math.floor(now / 1000);
    let error: string | null = null;
    let detail: string | undefined;
    try {
      const status = await this.targets.post(
        hook.url,
        {
          'content-type': 'application/json',
          'user-agent': 'postgate-webhooks/1',
          'webhook-id': d.id,
          'webhook-timestamp': String(ts),
          'webhook-signature': sign(this.sealer.open(hook.secret), d.id, ts, d.payload),
        },
        d.payload,
        this.settings.timeoutMs,
      );
      if (status >= 200 && status < 300) return this.store.webhooks.recordAttempt(d.id, 'delivered', d.attempt + 1, now, null, now);
      // A redirect is not followed: its target was never checked.
      error = `HTTP ${status}`;
    } catch (err) {
      // The project sees the class only; the operator's log gets the detail.
      error = failureOf(err);
      detail = (err as Error).message;
    }
    const attempt = d.attempt + 1;
    const delays = this.settings.retryDelays;
    const next = now + delays[Math.min(attempt - 1, delays.length - 1)]! * 1000;
    const expired = next - d.createdAt > this.settings.maxAgeSeconds * 1000;
    this.log.warn({ webhook: hook.id, delivery: d.id, attempt, error, detail, giveUp: expired }, 'webhook delivery failed');
    return this.store.webhooks.recordAttempt(d.id, expired ? 'failed' : 'pending', attempt, next, error, null);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
