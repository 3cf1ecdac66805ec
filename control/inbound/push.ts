// The receiving domains (receiving on and verified: store.inbound.receivingDomains) pushed to every
// gateway as one full replacement (SetReceivingDomains): whenever a gateway's event stream connects (it
// may have restarted; it keeps the last push on disk meanwhile), and whenever a domain changes on any
// node (the store publishes each change on the invalidation bus, which reaches every node's pushes).
import { create } from '@bufbuild/protobuf';
import type { Invalidator } from '../../core/invalidation.js';
import type { Logger } from '../../core/log.js';
import { unary } from '../../proto/grpc.js';
import { ReceivingDomainSchema, SetReceivingDomainsRequestSchema } from '../../proto/gen/postgate/gateway/v1/gateway_pb.js';
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
      const domains = await this.store.inbound.receivingDomains();
      const req = create(SetReceivingDomainsRequestSchema, { domains: domains.map((d) => create(ReceivingDomainSchema, d)) });
      return unary(gw.client, 'setReceivingDomains', req, undefined, 10_000);
    });
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}
