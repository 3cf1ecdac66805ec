// A gateway on Redis publishes its live delivery state every 2 s under a key of its own that
// expires soon after, so a control can add the gateways of other nodes (control/operations/state.ts)
// and a gateway that stopped drops out of the sum by itself.
import { publishNodeValue, type RedisLink } from '../../core/redis.js';
import type { Logger } from '../../core/log.js';
import { type DeliverySnapshot, STATE_KEY_PREFIX } from '../../common/delivery-state.js';

export const PUBLISH_EVERY_MS = 2_000;
/** A few missed publications before the node's state leaves the sum. */
export const STATE_TTL_MS = 6_000;

export const publishDeliveryState = (redis: RedisLink, node: string, snapshot: () => DeliverySnapshot, log: Logger): (() => void) =>
  publishNodeValue(redis, { name: `${STATE_KEY_PREFIX}${node}`, everyMs: PUBLISH_EVERY_MS, ttlMs: STATE_TTL_MS, what: 'the delivery state' }, snapshot, log);
