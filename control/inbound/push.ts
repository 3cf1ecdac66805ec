// The receiving domains (receiving on and verified: store.inbound.receivingDomains) pushed to every
// gateway as one full replacement (SetReceivingDomains): whenever a gateway's event stream connects (it
// may have restarted; it keeps the last push on disk meanwhile), and whenever a domain changes on any
// node (the store publishes each change on the invalidation bus, which reaches every node's pushes).
import type { Invalidator } from '../../core/invalidation.js';
import type { Logger } from '../../core/log.js';
import { GatewayPush } from '../delivery/gateway-push.js';
import type { Gateway, GatewayClients } from '../delivery/gateways.js';
import { STORE_CHANNELS, type Store } from '../store/index.js';

/** Changes come in bursts (a PATCH, then a verify): one push after they settle. */
const SETTLE_MS = 100;

export class ReceivingPush {
  private readonly pushes: GatewayPush;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Store,
    private readonly gateways: GatewayClients,
    invalidator: Invalidator,
    log: Logger,
  ) {
    this.pushes = new GatewayPush('receiving domains', log);
    // The store publishes inside its write: read after it has committed, not in the publish.
    invalidator.subscribe(STORE_CHANNELS.domains, () => this.soon());
    invalidator.onReset(() => this.soon());
  }

  private soon(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      for (const gw of this.gateways.list) void this.push(gw);
    }, SETTLE_MS);
    this.timer.unref();
  }

  /** Sends the receiving domains in force to one gateway, retrying until it takes them (or a newer push supersedes this one). */
  push(gw: Gateway): Promise<unknown> {
    return this.pushes.push(gw, async () => {
      await this.gateways.setReceivingDomains(gw, await this.store.inbound.receivingDomains());
      return true;
    });
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}
