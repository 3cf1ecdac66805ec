// Fixed-window counters several nodes share through Redis, without a round trip per event.
//
// Each node counts in memory, synchronously, and every FLUSH_MS writes its own count of each
// window to Redis and reads back the others'. A window is the hash <prefix>count:<name>:<ms>:<n>,
// n = floor(now / ms), so every node shares the same windows; each node's field holds its own
// absolute count (HSET, not INCRBY): a write repeated after a lost reply never counts twice, and
// after Redis lost its data (a restart) the nodes simply write their counts again. The hash
// expires a little after its window ends (PEXPIRE on its first write).
//
// A read tells what the others had written, not what they counted since their last write. So a
// limit judges `judged`: the others' count at the last read, plus this node's count, plus, for
// each other node counting in this window, as much as this node counted since its previous read
// (nodes behind one load balancer count alike; a read sees everything another node counted
// before the previous one). Until a window's second read every node is assumed to count. With
// nodes counting alike the sum stays within the limit even at full speed; otherwise it can pass
// the limit by at most about (nodes − 1) × what one node counts in one flush interval (a node
// that starts counting in a window mid-way is blind until its first read, a round trip). Near a
// limit a node may refuse a little early. A node counting alone reaches the limit exactly.
// Where a limit is small and must hold exactly (a warm-up norm), reserve() takes units
// atomically in Redis.
//
// While Redis is away (or before a window's first read) a count is not `fresh`, and `judged`
// is at least this node's own count × the number of nodes: each node keeps to its share. The
// number of nodes is learnt from a heartbeat set in Redis (per role: control, gateway) while
// it answers; before the first heartbeat, a configured number.
import crypto from 'node:crypto';
import type { ChainableCommander } from 'ioredis';
import { clock } from './clock.js';
import type { Logger } from './log.js';
import type { RedisLink } from './redis.js';

export interface SharedCount {
  /** The others' count at the last read plus this node's own count. */
  count: number;
  /** What a limit should judge: fresh, count plus what the others may have counted since (see above); else at least local × nodes. */
  judged: number;
  /** This node's own count in the window. */
  local: number;
  /** When the window ends (ms, on the clock `now` was given on). */
  resetAt: number;
  /** The others' count was read from Redis moments ago: false while Redis is away or before the first read. */
  fresh: boolean;
}

export interface SharedCountersOptions {
  /** Which nodes share the heartbeat set (control, gateway): each role learns its own number of nodes. */
  role: string;
  /** Nodes assumed while none has been seen through the heartbeat. */
  nodes: number;
  /** How often counts go to Redis and come back. */
  flushMs?: number;
  /**
   * This node's name in Redis (default: random per process). A node that seeds its counts
   * after a restart needs the same name as before, or they would count twice.
   */
  node?: string;
  log?: Logger;
}

export const FLUSH_MS = 50;
/** A window hash outlives its window by this, for nodes whose clocks run behind. */
const TTL_SLACK_MS = 10_000;
/** A read older than this (real time) no longer counts as fresh. */
const STALE_AFTER_FLUSHES = 4;
/** Windows not touched for this long (real time) are no longer read back each flush (they still are written). */
const READ_IDLE_MS = 5_000;
const HEARTBEAT_MS = 2_000;
/** A node missing from the heartbeat set for this long is no longer counted. */
const NODE_TTL_MS = 10_000;

// Sets this node's count, returns the others' sum and how many of them counted.
const WRITE = `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
local all = redis.call('HGETALL', KEYS[1])
local others, active = 0, 0
for i = 1, #all, 2 do
  local v = tonumber(all[i + 1])
  if all[i] ~= ARGV[1] and v > 0 then others = others + v; active = active + 1 end
end
return {others, active}`;

// Sets this node's count to ARGV[2] (its count with the new units) only if the total before them is under the limit.
const RESERVE = `
local all = redis.call('HGETALL', KEYS[1])
local others = 0
for i = 1, #all, 2 do if all[i] ~= ARGV[1] then others = others + tonumber(all[i + 1]) end end
if others + tonumber(ARGV[3]) >= tonumber(ARGV[4]) then return {0, others} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[5]) end
return {1, others}`;

// The heartbeat: this node is alive now (Redis's clock); answers how many are.
const HEARTBEAT = `
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], ms, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 3)
return redis.call('ZCARD', KEYS[1])`;

interface Commands {
  pgCountWrite(key: string, node: string, local: number, ttlMs: number): Promise<[number, number]>;
  pgCountReserve(key: string, node: string, local: number, before: number, limit: number, ttlMs: number): Promise<[number, number]>;
  pgHeartbeat(key: string, node: string, ttlMs: number): Promise<number>;
}
type Batch = ChainableCommander & { [K in keyof Commands]: (...args: Parameters<Commands[K]>) => Batch };

interface Entry {
  key: string;
  idx: number;
  windowMs: number;
  /** Everything this node counted in the window. */
  local: number;
  /** The local count Redis last acknowledged; -1: Redis may have lost it, write it again. */
  written: number;
  /** The others' count at the last read. */
  others: number;
  /** When (real time) the others' count was read or sent for; 0 = never. */
  readAt: number;
  /** This node's count when the last read was sent, and when the one before it was. */
  localAtRead: number;
  localAtPrevRead: number;
  /** Other nodes that had counted in the window at the last read. */
  activeOthers: number;
  reads: number;
  /** The reservations of this window, one after the other. */
  reserving?: Promise<unknown>;
  touchedAt: number;
}

export class SharedCounters {
  private readonly entries = new Map<string, Entry>();
  private readonly node: string;
  private readonly flushMs: number;
  private readonly timer: NodeJS.Timeout;
  private readonly beatTimer: NodeJS.Timeout;
  private flushing: Promise<void> | undefined;
  private soon = false;
  private lastFlushOk = false;
  private learntNodes = 0;
  private readonly cmd: Commands;

  constructor(
    private readonly link: RedisLink,
    private readonly opts: SharedCountersOptions,
  ) {
    this.flushMs = opts.flushMs ?? FLUSH_MS;
    this.node = opts.node ?? crypto.randomUUID();
    const client = link.client;
    client.defineCommand('pgCountWrite', { numberOfKeys: 1, lua: WRITE });
    client.defineCommand('pgCountReserve', { numberOfKeys: 1, lua: RESERVE });
    client.defineCommand('pgHeartbeat', { numberOfKeys: 1, lua: HEARTBEAT });
    this.cmd = client as unknown as Commands;
    this.timer = setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref();
    this.beatTimer = setInterval(() => void this.heartbeat(), HEARTBEAT_MS);
    this.beatTimer.unref();
    // Back from an outage: Redis may have lost the counts (a restart), so every node writes its own again.
    link.onChange((up) => {
      this.lastFlushOk = false;
      if (up) {
        for (const e of this.entries.values()) e.written = -1;
        void this.heartbeat();
        this.flushSoon();
      }
    });
    link.onClose(() => this.close());
    if (link.up) void this.heartbeat();
  }

  /** Redis answers: counts are shared. */
  get connected(): boolean {
    return this.link.up && this.lastFlushOk;
  }

  /** Nodes of this role: as the heartbeat last said, or the configured number before it ever did. */
  get nodes(): number {
    return this.learntNodes || this.opts.nodes;
  }

  /** Adds `by` to this node's count of `name` in the window of `now` and answers the count; `by` 0 only looks. */
  hit(name: string, windowMs: number, by = 1, now: number = clock.now()): SharedCount {
    const e = this.entry(name, windowMs, now);
    e.local += by;
    e.touchedAt = Date.now();
    return this.view(e);
  }

  /**
   * Resolves once the window of `name` has been read from Redis (at once when it was, or
   * Redis is away): a caller that can wait spares its first events the blind share.
   */
  async sync(name: string, windowMs: number, now: number = clock.now()): Promise<void> {
    const e = this.entry(name, windowMs, now);
    e.touchedAt = Date.now();
    // A flush already under way may have started before the entry existed: then the next one reads it.
    for (let i = 0; i < 3 && e.reads === 0 && this.link.up; i++) await this.flush();
  }

  /** This node's count from before a restart (the gateway's saved warm-up usage), as if counted now. */
  seed(name: string, windowMs: number, local: number, now: number = clock.now()): void {
    const e = this.entry(name, windowMs, now);
    if (local > e.local) e.local = local;
  }

  /**
   * Adds n units only if the count over all nodes is under `limit` before them, atomically in
   * Redis: exact where a limit is small. undefined when Redis did not answer (judge hit()'s
   * `judged` instead).
   */
  async reserve(name: string, windowMs: number, n: number, limit: number, now: number = clock.now()): Promise<{ ok: boolean; count: number } | undefined> {
    if (!this.link.up) return undefined;
    const e = this.entry(name, windowMs, now);
    e.touchedAt = Date.now();
    // One reservation of a window at a time, and no flush write of it meanwhile: each write
    // sets this node's whole count, so none may carry units that are still being decided.
    const turn = (e.reserving ?? Promise.resolve()).then(() => this.reserveNow(e, n, limit, now));
    e.reserving = turn.finally(() => {
      if (e.reserving === settled) e.reserving = undefined;
    });
    const settled = e.reserving;
    return turn;
  }

  private async reserveNow(e: Entry, n: number, limit: number, now: number): Promise<{ ok: boolean; count: number } | undefined> {
    if (!this.link.up) return undefined;
    const before = e.local;
    const sentAt = Date.now();
    try {
      const [ok, others] = await this.cmd.pgCountReserve(e.key, this.node, before + n, before, limit, this.ttl(e, now));
      // Fresher news of the others, though not a flush's read: the others' assumed progress still runs from the last one.
      e.others = others;
      e.readAt = sentAt;
      if (ok) {
        // Redis now holds before + n; what was counted meanwhile goes with the next flush.
        e.local += n;
        e.written = before + n;
      }
      return { ok: ok === 1, count: others + before };
    } catch (err) {
      this.link.failed(err);
      return undefined;
    }
  }

  /** Sends what changed and reads back what others counted (every FLUSH_MS; awaited at close). */
  flush(): Promise<void> {
    this.flushing ??= this.flushOnce().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    clearInterval(this.beatTimer);
    await this.flush();
    // Leaving: the others learn at their next heartbeat that there is one node fewer.
    if (this.link.up) await this.link.client.zrem(this.link.key(`nodes:${this.opts.role}`), this.node).catch(() => {});
  }

  private id(name: string, windowMs: number): string {
    return `${name}\n${windowMs}`;
  }

  private entry(name: string, windowMs: number, now: number): Entry {
    const id = this.id(name, windowMs);
    const idx = Math.floor(now / windowMs);
    let e = this.entries.get(id);
    if (!e || e.idx !== idx) {
      // A new window (or the clock moved: tests move it). What the old one did not write is moot.
      e = {
        key: this.link.key(`count:${name}:${windowMs}:${idx}`),
        idx,
        windowMs,
        local: 0,
        written: 0,
        others: 0,
        readAt: 0,
        localAtRead: 0,
        localAtPrevRead: 0,
        activeOthers: 0,
        reads: 0,
        touchedAt: Date.now(),
      };
      this.entries.set(id, e);
      // Learn the others' count now rather than at the next tick.
      this.flushSoon();
    }
    return e;
  }

  private view(e: Entry): SharedCount {
    const fresh = this.connected && e.readAt > 0 && Date.now() - e.readAt <= STALE_AFTER_FLUSHES * this.flushMs;
    const nodes = this.nodes;
    const count = e.others + e.local;
    // Every live node (heartbeat) is assumed to count as fast as this one since the last read, even one
    // that has not shown a count yet: a peer whose flush comes late would otherwise look idle, and both
    // could take the whole limit (seen: [1000, 500] at 1000/s). A node that is really alone still
    // reaches the limit: each read halves what is left, about ten reads (half a second) at 1000/s.
    const others = e.reads < 2 ? nodes - 1 : Math.max(e.activeOthers, nodes - 1);
    // Not fresh: the others are not heard; each node keeps to its share instead.
    const judged = fresh ? count + others * Math.max(0, e.local - e.localAtPrevRead) : Math.max(count, e.local * nodes);
    return { count, judged, local: e.local, resetAt: (e.idx + 1) * e.windowMs, fresh };
  }

  /** The others' count as Redis answered a command sent when this node's count was `local`. */
  private read(e: Entry, others: number, active: number, local: number, sentAt: number): void {
    e.others = others;
    e.activeOthers = active;
    e.reads++;
    e.readAt = sentAt;
    e.localAtPrevRead = e.localAtRead;
    e.localAtRead = local;
  }

  private ttl(e: Entry, now: number): number {
    return Math.max(1, (e.idx + 1) * e.windowMs - now) + TTL_SLACK_MS;
  }

  private flushSoon(): void {
    if (this.soon || !this.link.up) return;
    this.soon = true;
    setImmediate(() => {
      this.soon = false;
      void this.flush();
    });
  }

  private async flushOnce(): Promise<void> {
    const now = clock.now();
    const real = Date.now();
    for (const [id, e] of this.entries) {
      const start = e.idx * e.windowMs;
      // Ended windows go; so do windows "in the future" after the clock was moved back.
      if (start + e.windowMs <= now || start > now) this.entries.delete(id);
    }
    if (!this.link.up) {
      this.lastFlushOk = false;
      return;
    }
    const batch = this.link.client.pipeline() as Batch;
    const sent: Array<{ e: Entry; local: number; write: boolean }> = [];
    for (const e of this.entries.values()) {
      if (e.reserving) continue;
      if (e.local !== e.written) {
        batch.pgCountWrite(e.key, this.node, e.local, this.ttl(e, now));
        sent.push({ e, local: e.local, write: true });
      } else if (real - e.touchedAt <= READ_IDLE_MS) {
        batch.hgetall(e.key);
        sent.push({ e, local: e.local, write: false });
      }
    }
    if (!sent.length) {
      // Nothing to say: still learn whether Redis answers.
      this.lastFlushOk = true;
      return;
    }
    let results: Array<[Error | null, unknown]> | null;
    try {
      results = await batch.exec();
    } catch (err) {
      this.lastFlushOk = false;
      this.link.failed(err);
      return;
    }
    if (!results) return;
    let failed: Error | undefined;
    for (let i = 0; i < sent.length; i++) {
      const { e, local, write } = sent[i]!;
      const [err, value] = results[i] ?? [new Error('no reply'), null];
      if (err) {
        failed ??= err;
        continue;
      }
      if (write) {
        // Replies come in the order sent: this is what Redis holds now.
        e.written = local;
        const [others, active] = value as [number, number];
        this.read(e, others, active, local, real);
      } else {
        const fields = (value ?? {}) as Record<string, string>;
        let others = 0;
        let active = 0;
        for (const [n, v] of Object.entries(fields)) {
          if (n === this.node || !(Number(v) > 0)) continue;
          others += Number(v);
          active++;
        }
        this.read(e, others, active, local, real);
        // Redis no longer has this node's count (restarted, or the hash expired early): write it again.
        if (Number(fields[this.node] ?? 0) < e.written) e.written = -1;
      }
    }
    this.lastFlushOk = !failed;
    if (failed) {
      this.opts.log?.debug({ err: failed.message }, 'shared counters: flush failed');
      this.link.failed(failed);
    }
  }

  private async heartbeat(): Promise<void> {
    if (!this.link.up) return;
    try {
      this.learntNodes = Math.max(1, await this.cmd.pgHeartbeat(this.link.key(`nodes:${this.opts.role}`), this.node, NODE_TTL_MS));
    } catch (err) {
      this.link.failed(err);
    }
  }
}
