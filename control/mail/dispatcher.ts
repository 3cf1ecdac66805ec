// Hands committed emails to the gateways. Runs after the 202: builds the MIME
// message and enqueues it; an email is marked dispatched only once a gateway has
// queued it durably, so a crash of either side just means enqueueing again
// (the gateway answers a repeated id as a duplicate).
import type { Logger } from '../../core/log.js';
import { clock } from '../../core/clock.js';
import type { Store } from '../store/store.js';
import type { Gateway, Gateways } from '../gateways.js';
import { buildMime } from './mime.js';
import { domainOf, parseMailbox } from './address.js';
import type { NormalizedRequest } from './pipeline.js';
import type { Metrics } from '../metrics.js';

const BATCH = 200;
const RETRY_MS = 1000;

export class Dispatcher {
  private running = false;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly down = new Set<string>();

  constructor(private readonly store: Store, private readonly gateways: Gateways, private readonly log: Logger, private readonly metrics: Metrics) {}

  start(): void {
    this.wake();
  }

  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void this.drain().finally(() => {
      this.running = false;
      if (this.again) {
        this.again = false;
        this.wake();
      }
    });
  }

  private async drain(): Promise<void> {
    while (!this.stopped) {
      const rows = await this.store.undispatched(BATCH);
      if (!rows.length) return;
      const byGateway = new Map<Gateway, typeof rows>();
      for (const r of rows) {
        const gw = this.gateways.pick(r.id);
        byGateway.set(gw, [...(byGateway.get(gw) ?? []), r]);
      }
      let failed = false;
      await Promise.all(
        [...byGateway].map(async ([gw, list]) => {
          try {
            const messages = await Promise.all(
              list.map(async (r) => {
                const req = JSON.parse(r.request) as NormalizedRequest;
                const from = parseMailbox(req.from)!.address;
                return {
                  emailId: r.id,
                  projectId: r.projectId,
                  mailFrom: from,
                  rcptTo: r.recipients.filter((x) => x.status === 'queued').map((x) => x.address),
                  raw: await buildMime(r.id, r.createdAt, req),
                  bulk: r.bulk,
                  senderDomain: domainOf(from),
                };
              }),
            );
            const res = await this.gateways.enqueue(gw, messages);
            const done = res.results.filter((x) => !x.error).map((x) => x.emailId);
            for (const x of res.results) if (x.error) this.log.error({ emailId: x.emailId, err: x.error }, 'gateway refused to queue');
            await this.store.markDispatched(done, clock.now());
            this.metrics.inc('postgate_emails_dispatched_total', done.length);
            if (done.length < list.length) failed = true;
          } catch (err) {
            failed = true;
            // Once per outage, not once a second.
            if (!this.down.has(gw.name)) this.log.warn({ gateway: gw.name, err: (err as Error).message }, 'gateway unavailable; will retry');
            this.down.add(gw.name);
            return;
          }
          if (this.down.delete(gw.name)) this.log.info({ gateway: gw.name }, 'gateway reachable again');
        }),
      );
      if (failed) {
        this.schedule();
        return;
      }
    }
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), RETRY_MS);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
