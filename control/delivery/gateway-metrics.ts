// The gateways' own families (their Metrics RPC) appended to control's /metrics, so one scrape
// covers the node. Each gateway's samples carry a `gateway` label (its POSTGATE_GATEWAYS
// address), each family's HELP and TYPE once; a gateway that does not answer within a second is
// left out of that scrape and postgate_gateway_up says 0 for it.
import type { Logger } from '../../core/log.js';
import { mergeExpositions, Registry, type Gauge } from '../../core/metrics.js';
import type { GatewayClients } from './gateways.js';

const TIMEOUT_MS = 1_000;

export class GatewayScrape {
  /** postgate_gateway_up: a registry of its own, rendered after the gateways answered. */
  readonly registry = new Registry();
  private readonly up: Gauge<'gateway'>;
  /** Logged once per gateway until it answers again. */
  private readonly silent = new Set<string>();

  constructor(
    private readonly gateways: Pick<GatewayClients, 'list' | 'metrics'>,
    private readonly log: Logger,
  ) {
    this.up = this.registry.gauge(
      'postgate_gateway_up',
      "1 when the gateway answered this scrape's Metrics call within a second, else 0 (its families are left out)",
      {
        labels: { gateway: gateways.list.map((g) => g.name) },
      },
    );
  }

  /** The scrape under way: scrapes that come meanwhile (both listeners, several scrapers) share its calls. */
  private pending?: Promise<string>;

  scrape = (): Promise<string> => {
    this.pending ??= this.collect().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  };

  private async collect(): Promise<string> {
    const parts = await Promise.all(
      this.gateways.list.map(async (gw) => {
        try {
          // The call's deadline, and a timer of our own should the channel not honour it.
          let timer: NodeJS.Timeout | undefined;
          const late = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error('no answer within a second')), TIMEOUT_MS + 100);
          });
          const text = await Promise.race([this.gateways.metrics(gw, TIMEOUT_MS), late]).finally(() => clearTimeout(timer));
          this.up.with({ gateway: gw.name }).set(1);
          this.silent.delete(gw.name);
          return { labels: { gateway: gw.name }, text };
        } catch (err) {
          this.up.with({ gateway: gw.name }).set(0);
          if (!this.silent.has(gw.name)) this.log.warn({ gateway: gw.name, err: String((err as Error).message ?? err) }, 'gateway metrics unavailable');
          this.silent.add(gw.name);
          return undefined;
        }
      }),
    );
    return this.registry.render() + mergeExpositions(parts.filter((p) => p !== undefined));
  }
}
