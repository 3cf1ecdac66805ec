// Caches that must drop an entry at once (API keys, projects, sessions, webhooks, verified
// domains) listen here. In one process this is an EventEmitter. With Redis (several control
// nodes), a publish reaches the local bus at once and every other node through a Redis
// channel, so the caches stay memory lookups and a sign-out is seen everywhere within
// milliseconds.
//
// A node that cannot hear Redis may miss other nodes' invalidations. Its caches then must
// not trust what they hold: every cache registers onReset(), which drops everything; it
// runs when the node loses Redis, every RESET_WHILE_AWAY_MS while it is away (so no entry
// outlives that), and once more when Redis is back (messages may have been missed meanwhile).
import { EventEmitter } from 'node:events';
import crypto from 'node:crypto';
import type { Logger } from './log.js';
import type { RedisLink } from './redis.js';

export interface Invalidator {
  publish(channel: string, key: string): void;
  subscribe(channel: string, fn: (key: string) => void): void;
  /** False while this node may not hear other nodes' invalidations (always true on one node). */
  readonly connected: boolean;
  /** fn drops every entry of a cache: this node may have missed invalidations. */
  onReset(fn: () => void): void;
}

export function localInvalidator(): Invalidator {
  const bus = new EventEmitter();
  bus.setMaxListeners(0);
  return {
    publish: (channel, key) => void bus.emit(channel, key),
    subscribe: (channel, fn) => void bus.on(channel, fn),
    connected: true,
    // One process hears every invalidation: nothing is ever missed.
    onReset: () => {},
  };
}

/** While Redis is away, caches are emptied this often: the age bound of every cached entry. */
export const RESET_WHILE_AWAY_MS = 1000;
/** Each node sends itself a heartbeat through Redis this often; missing it for HEARD_WITHIN_MS means it is not hearing others either. */
const HEARTBEAT_MS = 250;
const HEARD_WITHIN_MS = 1000;
/** Invalidations published while away, sent again when Redis is back (past this many, every node is told to drop everything instead). */
const REPLAY_MAX = 10_000;
/** Not a cache channel: tells every node to drop every cache. */
const RESET_ALL = '*reset';

export interface RedisInvalidator extends Invalidator {
  close(): Promise<void>;
}

/**
 * The Redis-backed invalidator. `link` publishes; a second connection subscribes to one
 * channel, `<prefix>invalidate`, whose messages are JSON [node, channel, key]; a node skips its own.
 */
export function redisInvalidator(link: RedisLink, log: Logger): RedisInvalidator {
  const node = crypto.randomUUID();
  const bus = new EventEmitter();
  bus.setMaxListeners(0);
  const resets: Array<() => void> = [];
  const topic = link.key('invalidate');
  const heartbeat = link.key(`invalidate:hb:${node}`);
  const sub = link.duplicate('invalidation');
  let heardAt = 0;
  let connected = false;
  let awayTimer: NodeJS.Timeout | undefined;
  /** channel → keys published while away; undefined after an overflow. */
  let unsent: Map<string, Set<string>> | undefined = new Map();
  let unsentCount = 0;

  const resetAll = () => {
    for (const fn of resets) {
      try {
        fn();
      } catch (err) {
        log.error({ err }, 'a cache failed to reset');
      }
    }
  };

  const send = (channel: string, key: string) => link.client.publish(topic, JSON.stringify([node, channel, key]));

  const remember = (channel: string, key: string) => {
    if (!unsent) return;
    if (++unsentCount > REPLAY_MAX) {
      unsent = undefined;
      return;
    }
    let keys = unsent.get(channel);
    if (!keys) unsent.set(channel, (keys = new Set()));
    keys.add(key);
  };

  /** Back on Redis: what this node published while away reaches the others (or, if too much, they drop everything). */
  const replay = () => {
    const pending = unsent;
    unsent = new Map();
    unsentCount = 0;
    const fail = (err: unknown) => log.warn({ err }, 'could not send the invalidations made while redis was away');
    if (!pending) return void send(RESET_ALL, '').catch(fail);
    for (const [channel, keys] of pending) for (const key of keys) void send(channel, key).catch(fail);
  };

  const setConnected = (next: boolean) => {
    if (next === connected) return;
    connected = next;
    // Either way something may have been missed: drop everything now.
    resetAll();
    if (next) {
      clearInterval(awayTimer);
      awayTimer = undefined;
      replay();
    } else {
      awayTimer = setInterval(resetAll, RESET_WHILE_AWAY_MS);
      awayTimer.unref();
    }
  };

  // Connected means: both connections up and this node's own heartbeat came back through Redis.
  const check = () => setConnected(link.up && sub.up && Date.now() - heardAt < HEARD_WITHIN_MS);
  const beat = () => {
    if (link.up) void link.client.publish(heartbeat, '1').catch((err) => link.failed(err));
    check();
  };
  const beatTimer = setInterval(beat, HEARTBEAT_MS);
  beatTimer.unref();

  sub.client.on('message', (ch: string, raw: string) => {
    if (ch === heartbeat) {
      heardAt = Date.now();
      return check();
    }
    if (ch !== topic) return;
    let msg: unknown;
    try {
      msg = JSON.parse(raw);
    } catch {
      return;
    }
    if (!Array.isArray(msg) || msg.length !== 3 || msg[0] === node || typeof msg[1] !== 'string' || typeof msg[2] !== 'string') return;
    if (msg[1] === RESET_ALL) resetAll();
    else bus.emit(msg[1], msg[2]);
  });
  // Each (re)connection subscribes again, then proves itself with a heartbeat.
  const subscribe = () =>
    void sub.client
      .subscribe(topic, heartbeat)
      .then(beat)
      .catch((err) => sub.failed(err));
  sub.client.on('ready', subscribe);
  // A lost connection is known at once; the heartbeat covers a silent one.
  link.onChange(check);
  sub.onChange(check);
  // Until Redis first answers, caches live no longer than they would while it is away.
  awayTimer = setInterval(resetAll, RESET_WHILE_AWAY_MS);
  awayTimer.unref();

  const invalidator: RedisInvalidator = {
    publish(channel, key) {
      bus.emit(channel, key);
      // Not sent (or not surely sent): sent again when Redis is back.
      if (!link.up) return remember(channel, key);
      send(channel, key).catch(() => remember(channel, key));
    },
    subscribe: (channel, fn) => void bus.on(channel, fn),
    get connected() {
      return connected;
    },
    onReset: (fn) => void resets.push(fn),
    async close() {
      clearInterval(beatTimer);
      clearInterval(awayTimer);
      await sub.close();
    },
  };
  link.onClose(() => invalidator.close());
  return invalidator;
}
