// A gateway on Redis publishes its live delivery state every 2 s under a key of its own that
// expires soon after, so a control can add the gateways of other nodes (control/operations/state.ts)
// and a gateway that stopped drops out of the sum by itself.
import type { RedisLink } from '../../core/redis.js';
import type { Logger } from '../../core/log.js';
import { type DeliverySnapshot, STATE_KEY_PREFIX } from '../../common/delivery-state.js';

export const PUBLISH_EVERY_MS = 2_000;
/** A few missed publications before the node's state leaves the sum. */
export const STATE_TTL_MS = 6_000;

export function publishDeliveryState(redis: RedisLink, node: string, snapshot: () => DeliverySnapshot, log: Logger): () => void {
  let failing = false;
  const publish = () => {
    if (!redis.up) return;
    redis.client.set(redis.key(`${STATE_KEY_PREFIX}${node}`), JSON.stringify(snapshot()), 'PX', STATE_TTL_MS).then(
      () => {
        failing = false;
      },
      (err: unknown) => {
        redis.failed(err);
        // Once per outage: the next success logs nothing, the state is simply there again.
        if (!failing) log.warn({ err }, 'could not publish the delivery state to Redis');
        failing = true;
      },
    );
  };
  const timer = setInterval(publish, PUBLISH_EVERY_MS);
  timer.unref();
  publish();
  const stop = () => clearInterval(timer);
  redis.onClose(stop);
  return stop;
}
