// State shared by gateway/main.ts and the Haraka plugins of one gateway process.
// The plugins are CommonJS and reach this ES module with import(), which returns
// the same instance main.ts loaded, so there is one config, logger and outbox.
import crypto from 'node:crypto';
import { loadConfig, type Config } from '../core/config.js';
import { createLogger, type Logger } from '../core/log.js';
import { Outbox, type DeliveryEventRow, type NewDeliveryEvent, type UsageRow } from './outbox/outbox.js';
import { clock, dayOf } from '../core/clock.js';
import { EventFeed } from './event-feed.js';
import { gatewayPaths, type GatewayPaths } from './paths.js';
import { Pacer } from './pacing/pacer.js';
import type { ConnectionReuse } from './hooks/connection-reuse.js';
import type { PipeliningStats } from './hooks/pipelining.js';
import { connectRedis } from '../core/redis.js';
import { SharedCounters } from '../core/shared-counters.js';
import { GatewayMetrics } from './metrics.js';
import { DeliveryHolds } from './shaping/holds.js';
import { Shaper } from './shaping/shaper.js';
import { mergeRules } from '../common/shaping.js';
import { QueueState } from './state/tracker.js';
import { deliverySnapshot, type SnapshotFilter } from './state/snapshot.js';
import { publishDeliveryState } from './state/publish.js';
import { keepWindows } from './state/persist.js';
import type { DeliverySnapshot } from '../common/delivery-state.js';

export interface GatewayContext {
  config: Config;
  paths: GatewayPaths;
  log: Logger;
}

export interface GatewayRuntime extends GatewayContext {
  outbox: Outbox;
  feed: EventFeed;
  /** Queue items (Haraka todo uuid) with an SMTP attempt under way: shutdown waits for them. */
  attempts: Set<string>;
  /** Reused outbound connections (gateway/hooks/connection-reuse.ts), when delivery.connectionIdleSeconds > 0. */
  connections?: ConnectionReuse;
  /** Outbound sessions that pipelined their envelope (gateway/hooks/pipelining.ts). */
  pipelining?: PipeliningStats;
  /** Warm-up, rate and connection limits (postgate_pacing); throttles pushed by control. */
  pacer: Pacer;
  /** The gateway's own metrics (gateway/metrics.ts), served by the Metrics RPC. */
  metrics: GatewayMetrics;
  /** Whether a provider/project is stopped now: shaping's suspensions and the operator's (setOperator, from SetControls). */
  holds: DeliveryHolds;
  /** Adaptive shaping (gateway/shaping/shaper.ts): observe() the remote answers; actions() in force. */
  shaper: Shaper;
  /** The live delivery state (gateway/state): counts kept as queue items change, and the items by provider and project. */
  queueState: QueueState;
  /** This gateway's name in a cluster (its redis-node id); '' when alone. */
  node: string;
  /** The live delivery state now (DeliveryState, and published to Redis every 2 s). */
  deliveryState(filter?: SnapshotFilter): DeliverySnapshot;
  /** Writes warm-up counters not yet saved, to the outbox and to Redis, and closes Redis (at shutdown). */
  flushUsage(): Promise<void>;
  /**
   * Appends events durably, then wakes the Events streams. `finished`: queue files they close; `now`:
   * committed before this returns (Outbox.appendEvents).
   */
  record(events: readonly NewDeliveryEvent[], finished?: readonly string[], now?: boolean): Promise<DeliveryEventRow[]>;
}

let context: GatewayContext | undefined;
let runtime: Promise<GatewayRuntime> | undefined;

export function gatewayContext(): GatewayContext {
  if (!context) {
    const config = loadConfig();
    context = { config, paths: gatewayPaths(config), log: createLogger('gateway', config.logLevel) };
  }
  return context;
}

async function open(): Promise<GatewayRuntime> {
  const ctx = gatewayContext();
  const outbox = Outbox.open(ctx.paths.outboxFile, ctx.config.storage);
  const feed = new EventFeed(await outbox.lastSeq());
  // Until control (or the last push, below) gives throttles, the configured defaults apply.
  // Counters are written a quarter second at a time: a crash forgets at most that much of
  // today's warm-up usage (a few messages over a norm), and delivery saves a write per message.
  let unsaved: UsageRow[] = [];
  const saveUsage = () => {
    const rows = unsaved;
    unsaved = [];
    return outbox.addUsage(rows).catch((err) => ctx.log.error({ err }, 'could not record pacing usage'));
  };
  // Several gateways share warm-up and rate counts through Redis when it is configured; not needed to start.
  const { redisUrl, redisPrefix, redisNodes } = ctx.config;
  const redis = redisUrl ? connectRedis({ redisUrl, redisPrefix }, ctx.log) : undefined;
  // Named as before a restart: the warm-up counts this gateway seeds from its outbox replace its own in Redis instead of adding to them.
  let node = await outbox.setting('redis-node');
  if (redis && !node) await outbox.putSetting('redis-node', (node = crypto.randomUUID()));
  const shared = redis && new SharedCounters(redis, { role: 'gateway', nodes: redisNodes, log: ctx.log, node });
  const pacer = new Pacer(
    ctx.config.pacing.providers,
    (rows) => {
      if (!unsaved.length) setTimeout(() => void saveUsage(), 250).unref();
      unsaved.push(...rows);
    },
    shared,
  );
  pacer.loadUsage(await outbox.usageOfDay(dayOf(clock.now())));
  // The operator's throttles as control last pushed them, so a restart does not fall back to the defaults.
  const pushed = await outbox.setting('throttles');
  if (pushed) pacer.setThrottles(JSON.parse(pushed) as Parameters<Pacer['setThrottles']>[0]);
  const holds = new DeliveryHolds();
  pacer.useHolds(holds);
  // The actions in force on the other gateways (Redis) are loaded before the first attempt.
  const shaper = new Shaper({
    rules: mergeRules(ctx.config.shaping.rules, ctx.config.shaping.replaceDefaults),
    pacer,
    holds,
    log: ctx.log,
    redis,
    save: (json) => outbox.putSetting('shaping-actions', json),
  });
  // The actions in force before a restart hold again.
  shaper.restore(await outbox.setting('shaping-actions'));
  await shaper.start();
  const metrics = new GatewayMetrics(ctx.config);
  const queueState = new QueueState((name) => metrics.provider(name));
  metrics.queueCounts = () => queueState.byProvider();
  const saveWindows = await keepWindows(queueState, outbox, ctx.log);
  const rt: GatewayRuntime = {
    ...ctx,
    outbox,
    feed,
    attempts: new Set(),
    pacer,
    metrics,
    holds,
    shaper,
    queueState,
    node: redis ? (node ?? '') : '',
    deliveryState: (filter) =>
      deliverySnapshot(
        { node: rt.node, queueState, pacer, providers: metrics.providers, label: (n) => metrics.provider(n), connections: rt.connections, shaper },
        filter,
      ),
    async flushUsage() {
      await Promise.all([saveUsage(), saveWindows()]);
      await redis?.close();
    },
    async record(events, finished, now) {
      const rows = await outbox.appendEvents(
        events.filter((e) => e.emailId),
        finished,
        now,
      );
      if (rows.length) feed.published(rows[rows.length - 1]!.seq);
      return rows;
    },
  };
  // Controls on other nodes add this gateway's state to their sum.
  if (redis && node) publishDeliveryState(redis, node, () => rt.deliveryState(), ctx.log);
  return rt;
}

/** Opens the outbox once per process; every caller gets the same runtime. */
export function gatewayRuntime(): Promise<GatewayRuntime> {
  return (runtime ??= open());
}
