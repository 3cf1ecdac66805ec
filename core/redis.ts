// The one Redis client factory. Redis holds what several nodes must share fast (limit and
// pacing counters, cache invalidations), never what must not be lost: so a node runs on
// without it. Commands fail at once while it is away (no offline queue, no retries of
// commands in flight) and callers fall back to their per-node rule; the client reconnects
// by itself. One log line when Redis goes away and one when it is back, never one per
// command or per reconnection attempt.
import { createRequire } from 'node:module';
import type { Redis, RedisOptions } from 'ioredis';
import type { Logger } from './log.js';

export interface RedisSettings {
  redisUrl: string;
  redisPrefix: string;
}

export interface RedisLink {
  readonly client: Redis;
  /** Connected, authenticated and answering. */
  readonly up: boolean;
  /** The key or channel `name` under this deployment's prefix. */
  key(name: string): string;
  /** fn(up) runs on each change: false when Redis went away, true when it is back. */
  onChange(fn: (up: boolean) => void): void;
  /** A command failed: a timeout means a server that stopped answering, so reconnect rather than wait on the socket. */
  failed(err: unknown): void;
  /** A second connection to the same server with the same behaviour (a subscriber needs its own). */
  duplicate(purpose: string): RedisLink;
  /** fn runs first on close() (last flushes, timers). */
  onClose(fn: () => Promise<void> | void): void;
  close(): Promise<void>;
}

/** Past this a command counts as failed: limits must not wait on a stalled server. */
const COMMAND_TIMEOUT_MS = 1000;

const OPTIONS: RedisOptions = {
  // Fail fast: a command while disconnected rejects at once, and commands in flight when the
  // connection drops reject instead of being replayed later (their callers have moved on).
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  commandTimeout: COMMAND_TIMEOUT_MS,
  connectTimeout: 2000,
  // Reconnect forever, backing off to one attempt every 2 s.
  retryStrategy: (times) => Math.min(100 * times, 2000),
  // Subscribers resubscribe themselves on 'ready' (core/invalidation.ts).
  autoResubscribe: false,
  keepAlive: 10_000,
};

/** Where the server is, without the password. */
export function redisTarget(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname.length > 1 ? u.pathname : ''}`;
}

const reason = (err: unknown): string => (err instanceof Error ? err.message : String(err)).slice(0, 200);

const require = createRequire(import.meta.url);

/** `quiet`: a second connection, whose comings and goings the first one already reports (at debug level only). */
export function connectRedis(settings: RedisSettings, log: Logger, purpose = 'commands', quiet = false): RedisLink {
  const target = redisTarget(settings.redisUrl);
  // Loaded on the first connection: a node without Redis never loads the client (memory).
  const IORedis = (require('ioredis') as typeof import('ioredis')).Redis;
  const client = new IORedis(settings.redisUrl, { ...OPTIONS, connectionName: `postgate-${purpose}` });
  const listeners: Array<(up: boolean) => void> = [];
  const closers: Array<() => Promise<void> | void> = [];
  let state: 'starting' | 'up' | 'down' = 'starting';
  let lastError: string | undefined;
  let closing = false;

  const set = (next: 'up' | 'down', why?: string) => {
    if (closing || state === next) return;
    const was = state;
    state = next;
    if (quiet) {
      log.debug({ redis: target, purpose, reason: why }, next === 'up' ? 'redis connection up' : 'redis connection down');
    } else if (next === 'up') {
      log.info({ redis: target, purpose }, was === 'starting' ? 'redis connected' : 'redis is back: shared counters and invalidations resume');
    } else if (was === 'starting') {
      log.warn({ redis: target, purpose, reason: why }, 'redis unreachable at start: running on per-node limit shares and short-lived caches until it answers');
    } else {
      log.warn({ redis: target, purpose, reason: why }, 'redis went away: running on per-node limit shares and short-lived caches until it is back');
    }
    for (const fn of listeners) fn(next === 'up');
  };

  client.on('ready', () => {
    lastError = undefined;
    set('up');
  });
  // ioredis reports each failed attempt: remember the reason, log only the change of state.
  client.on('error', (err: unknown) => {
    lastError = reason(err);
    if (state === 'starting') set('down', lastError);
  });
  client.on('close', () => set('down', lastError ?? 'connection closed'));

  const link: RedisLink = {
    client,
    get up() {
      return state === 'up' && client.status === 'ready';
    },
    key: (name) => settings.redisPrefix + name,
    onChange: (fn) => void listeners.push(fn),
    failed(err) {
      if (closing || state !== 'up') return;
      if (/timed out/i.test(reason(err))) {
        lastError = 'commands timed out';
        client.disconnect(true);
      }
    },
    duplicate: (p) => connectRedis(settings, log, p, true),
    onClose: (fn) => void closers.push(fn),
    async close() {
      for (const fn of closers.splice(0)) {
        try {
          await fn();
        } catch {
          // Closing is best effort: Redis may be away.
        }
      }
      closing = true;
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    },
  };
  return link;
}

/** How a node publishes a value of its own for the other nodes to read (publishNodeValue). */
export interface NodePublication {
  /** The key (the deployment prefix is put before it): one per node, e.g. `delivery-state:<node>`. */
  name: string;
  everyMs: number;
  /** A few missed publications before the node's value expires and leaves the sum by itself. */
  ttlMs: number;
  /** What the warning names when a publication fails. */
  what: string;
}

/**
 * Publishes value() every `everyMs` under the node's own expiring key; one warning per outage (the next
 * success logs nothing, the value is simply there again). Returns the stop function (also run on close).
 */
export function publishNodeValue(redis: RedisLink, p: NodePublication, value: () => unknown, log: Logger): () => void {
  let failing = false;
  const publish = () => {
    if (!redis.up) return;
    redis.client.set(redis.key(p.name), JSON.stringify(value()), 'PX', p.ttlMs).then(
      () => {
        failing = false;
      },
      (err: unknown) => {
        redis.failed(err);
        if (!failing) log.warn({ err }, `could not publish ${p.what} to Redis`);
        failing = true;
      },
    );
  };
  const timer = setInterval(publish, p.everyMs);
  timer.unref();
  publish();
  const stop = () => clearInterval(timer);
  redis.onClose(stop);
  return stop;
}

/** Every node's value published under `prefix` (publishNodeValue), this node's among them. */
export async function readNodeValues<T>(redis: RedisLink, prefix: string): Promise<T[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.client.scan(cursor, 'MATCH', redis.key(`${prefix}*`), 'COUNT', 200);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  if (!keys.length) return [];
  const out: T[] = [];
  for (const raw of await redis.client.mget(...keys)) if (raw) out.push(JSON.parse(raw) as T);
  return out;
}
