// Delivery pacing, decided before each attempt (Haraka's send_email hook):
//
// - warm-up: a project's bulk mail to a provider stops at the day's norm (transactional
//   mail is counted but never held) and waits for the next UTC day;
// - a rejected recipient's retry waits for its time (gateway/retry.ts schedules it);
// - rate and connection limits per provider (per recipient domain for `other`), with
//   transactional mail admitted before bulk when a slot frees.
//
// Everything held here is held with Haraka's DELAY, which neither counts a failure nor
// touches the queue file: the retry budget is untouched, and after a restart the mail
// simply comes back through this decision. The hook glue (gateway/hooks/pacing.ts)
// supplies a wake() per held item, so a moved clock, a raised norm or a freed
// connection releases mail at once instead of at the end of its delay.
//
// Several gateways (POSTGATE_REDIS_URL) share the warm-up counts and the rates through Redis
// (core/shared-counters.ts): a project's day at a provider, and each rate gate's minute, are
// counted over all gateways. Bulk mail under a norm is reserved atomically before its decision
// (prepare(): one Redis call per bulk message while a norm applies), so the gateways together
// never pass the norm; transactional mail is counted locally and flushed. A rate is judged on
// the gateways' count in the current clock minute (each gateway still spaces its own sends
// with its token bucket); connections stay per gateway. While Redis is away, each gateway
// allows its share: its own count × the number of gateways must stay under the norm or rate.
// Each gateway's own counts (saved in its outbox, reported by stats()) stay its own.
import { clock, DAY_MS, dayOf, dayStart, nextDayStart } from '../../core/clock.js';
import type { ProviderThrottle } from '../../core/config.js';
import type { UsageRow } from '../outbox/outbox.js';
import { OTHER } from '../../common/providers.js';
import { normFor, warmupDay } from '../../common/warmup.js';
import type { SharedCounters } from '../../core/shared-counters.js';
import type { DeliveryHolds } from '../shaping/holds.js';

export interface Throttle extends ProviderThrottle {
  provider: string;
}

export interface PaceRequest {
  /** The queue item (Haraka's todo uuid). */
  key: string;
  projectId: string;
  bulk: boolean;
  domain: string;
  provider: string;
  recipients: number;
  /** Day 1 of the project's warm-up (epoch ms); 0 = today. */
  warmupStartMs: number;
  /** A scheduled retry of a rejected recipient is not due before this (epoch ms, our clock). */
  notBeforeMs: number;
}

/** shaping / suspended: a shaping rule's or the operator's suspension (gateway/shaping/holds.ts). */
export type HoldKind = 'warmup' | 'retry' | 'limit' | 'shaping' | 'suspended';

export type PaceDecision =
  | { kind: 'go' }
  /** Hold for delaySec (real seconds); untilMs is when, by our clock. */
  | {
      kind: 'hold';
      hold: HoldKind;
      untilMs: number;
      delaySec: number;
      norm?: number;
      used?: number;
      waitedMs?: number;
      /** shaping / suspended: the rule's name or operator:<id>, when the hold began, and when it ends (0 = until resumed). */
      rule?: string;
      sinceMs?: number;
      holdUntilMs?: number;
    };

/** A shaping action's lowered limit at a provider (gateway/shaping/shaper.ts). */
export interface ShapingLimit {
  rate?: number;
  connections?: number;
  /** When it ends (epoch ms, our clock). */
  untilMs: number;
}

interface Held {
  kind: HoldKind;
  untilMs: number;
  projectId: string;
  provider: string;
  bulk: boolean;
  wake: () => void;
}

interface Gate {
  name: string;
  inFlight: number;
  tokens: number;
  refilledAt: number;
  /** Waiting for a slot or a token, oldest first; transactional before bulk. */
  transactional: Map<string, () => void>;
  bulk: Map<string, () => void>;
  timer?: NodeJS.Timeout;
  /** The gateways' count of this minute reached the rate: no token before this (our clock). */
  fullUntil: number;
  /** When attempts were let go in the last minute (real time): the base of a shaping factor where no rate is set. */
  sent: number[];
}

interface Counter {
  transactional: number;
  bulk: number;
}

/** How long mail waiting for a connection or a token sleeps before it looks again on its own. */
export const LIMIT_RECHECK_MS = 30_000;
/** The window of a rate shared by several gateways. */
const RATE_WINDOW_MS = 60_000;
/** A shared rate that is not surely used up is looked at again this soon. */
const RECHECK_MS = 150;
/** Mail under a suspension without an end looks again this often on its own (a resume wakes it at once). */
const SUSPENDED_RECHECK_MS = 3600_000;

const warmupKey = (projectId: string, provider: string) => `warmup:${projectId}:${provider}`;
/** Rates and connections are per provider; for `other`, per recipient domain. */
const gateName = (req: Pick<PaceRequest, 'provider' | 'domain'>) => (req.provider === OTHER ? `${OTHER}:${req.domain.toLowerCase()}` : req.provider);
const rateKey = (gate: string) => `rate:${gate}`;

/** A bulk message's place under the norm, taken in Redis before its decision. */
interface Reservation {
  day: string;
  ok: boolean;
  /** The count over all gateways before this message. */
  used: number;
}

export class Pacer {
  private throttles = new Map<string, Throttle>();
  private readonly gates = new Map<string, Gate>();
  /** day|project|provider → counts. */
  private readonly usage = new Map<string, Counter>();
  /** Queue items already counted, and on which day (a same-day retry is not counted twice). */
  private readonly counted = new Map<string, string>();
  private readonly held = new Map<string, Held>();
  /** Items given a slot by pump() that have not come back through decide() yet. */
  private readonly admitted = new Map<string, string>();
  /** Items holding a connection slot: key → gate name. */
  private readonly slots = new Map<string, string>();
  /** When each item waiting for a slot or a token began to wait (real time). */
  private readonly waitingSince = new Map<string, number>();
  private readonly reservations = new Map<string, Reservation>();
  /** Scheduled retries the operator sent now (SendNow): their not_before is ignored once. */
  private readonly retryNow = new Set<string>();
  /** Shaping's lowered limits: provider → action id → limit (the effective limit is the lowest in force). */
  private readonly shaping = new Map<string, Map<string, ShapingLimit>>();
  /** Suspensions of shaping rules and of the operator (gateway/shaping/holds.ts). */
  private holds?: DeliveryHolds;

  constructor(
    defaults: Record<string, ProviderThrottle>,
    private readonly persist: (rows: UsageRow[]) => void,
    /** Counts shared with the other gateways (Redis); none: this gateway alone. */
    private readonly shared?: SharedCounters,
  ) {
    this.setThrottles(Object.entries(defaults).map(([provider, t]) => ({ provider, ...t })));
  }

  setThrottles(list: readonly Throttle[]): void {
    const next = new Map(list.map((t) => [t.provider, { ...t }]));
    if (!next.has(OTHER))
      next.set(OTHER, this.throttles.get(OTHER) ?? { provider: OTHER, dailyNorm: 0, growth: 1, maxDailyNorm: 0, ratePerMinute: 0, connections: 0 });
    this.throttles = next;
    // Norms or limits may have grown: everything held gets a fresh look.
    this.reconsider(true);
    for (const g of this.gates.values()) this.pump(g);
  }

  throttleList(): Throttle[] {
    return [...this.throttles.values()];
  }

  throttleOf(provider: string): Throttle {
    return this.throttles.get(provider) ?? this.throttles.get(OTHER)!;
  }

  /** The limits in force at a provider: the configured ones lowered by shaping's actions in force (0 = unlimited). */
  effective(provider: string): Throttle {
    const t = this.throttleOf(provider);
    const lowered = this.shaping.get(this.throttles.has(provider) ? provider : OTHER);
    if (!lowered?.size) return t;
    const now = clock.now();
    let rate = t.ratePerMinute;
    let connections = t.connections;
    for (const [id, l] of lowered) {
      if (l.untilMs <= now) {
        lowered.delete(id);
        continue;
      }
      if (l.rate !== undefined) rate = rate ? Math.min(rate, l.rate) : l.rate;
      if (l.connections !== undefined) connections = connections ? Math.min(connections, l.connections) : l.connections;
    }
    return rate === t.ratePerMinute && connections === t.connections ? t : { ...t, ratePerMinute: rate, connections };
  }

  /**
   * What a shaping factor lowers: the limit in force, or where there is none what the provider
   * gets now (sends in the last minute, attempts under way), at least 1.
   */
  shapingBase(provider: string, kind: 'rate' | 'connections'): number {
    const t = this.effective(provider);
    const set = kind === 'rate' ? t.ratePerMinute : t.connections;
    if (set) return set;
    const since = Date.now() - RATE_WINDOW_MS;
    let seen = 0;
    for (const g of this.gatesOf(provider)) seen += kind === 'rate' ? g.sent.filter((t) => t > since).length : g.inFlight;
    return Math.max(1, seen);
  }

  /**
   * A shaping action lowers (or, undefined, stops lowering) a provider's rate or connections. A
   * lower rate takes effect at once: tokens saved up at the old rate are dropped, so the next
   * attempt already waits for the new spacing.
   */
  setShapingLimit(provider: string, id: string, limit: ShapingLimit | undefined): void {
    let lowered = this.shaping.get(provider);
    if (limit) {
      if (!lowered) this.shaping.set(provider, (lowered = new Map()));
      lowered.set(id, limit);
      if (limit.rate !== undefined) {
        const now = Date.now();
        for (const g of this.gatesOf(provider)) {
          g.tokens = Math.min(g.tokens, 0);
          g.refilledAt = now;
        }
      }
    } else if (!lowered?.delete(id)) return;
    // Raised again (or lowered): waiting mail looks at the new limits.
    for (const g of this.gatesOf(provider)) this.pump(g);
  }

  /** The gates of a provider (for `other`, every recipient domain's). */
  private *gatesOf(provider: string): Iterable<Gate> {
    for (const g of this.gates.values()) if (g.name === provider || (provider === OTHER && g.name.startsWith(`${OTHER}:`))) yield g;
  }

  /** The delivery holds decide() consults; mail they held wakes when they change. */
  useHolds(holds: DeliveryHolds): void {
    this.holds = holds;
    holds.onChange(() => this.releaseHolds());
  }

  /** Wakes mail held by a suspension that no longer applies to it. */
  private releaseHolds(): number {
    let woken = 0;
    for (const [key, h] of [...this.held]) {
      if ((h.kind !== 'shaping' && h.kind !== 'suspended') || this.holds?.check(h.provider, h.projectId)) continue;
      this.held.delete(key);
      h.wake();
      woken++;
    }
    return woken;
  }

  /** Loads persisted counters (today's, at start). */
  loadUsage(rows: readonly UsageRow[]): void {
    for (const r of rows) {
      this.usage.set(`${r.day}|${r.projectId}|${r.provider}`, { transactional: r.transactional, bulk: r.bulk });
      // Our part of the shared count, which Redis may have lost meanwhile.
      if (this.shared) this.shared.seed(warmupKey(r.projectId, r.provider), DAY_MS, r.transactional + r.bulk, dayStart(Date.parse(r.day)));
    }
  }

  /**
   * With shared counts, a bulk message under a norm takes its place in Redis first (atomic
   * over all gateways), so decide() stays synchronous. Never fails: without an answer from
   * Redis, decide() falls back to this gateway's share.
   */
  async prepare(req: PaceRequest): Promise<void> {
    if (!this.shared) return;
    // The first message of a gate in a minute learns the other gateways' count before its decision.
    if (this.effective(req.provider).ratePerMinute) await this.shared.sync(rateKey(gateName(req)), RATE_WINDOW_MS);
    if (!req.bulk) return;
    const now = clock.now();
    const day = dayOf(now);
    if (req.notBeforeMs > now || this.counted.get(req.key) === day) return;
    const held = this.reservations.get(req.key);
    if (held?.ok && held.day === day) return;
    const norm = normFor(this.throttleOf(req.provider), warmupDay(req.warmupStartMs, now));
    if (norm === Infinity) return;
    const r = await this.shared.reserve(warmupKey(req.projectId, req.provider), DAY_MS, req.recipients, norm, now);
    if (r) this.reservations.set(req.key, { day, ok: r.ok, used: r.count });
    else this.reservations.delete(req.key);
  }

  /** What counts against a norm: this gateway's usage, or with shared counts the gateways' (at least our share while Redis is away). */
  private usedToday(req: PaceRequest, c: Counter, now: number): number {
    const own = c.transactional + c.bulk;
    if (!this.shared) return own;
    const v = this.shared.hit(warmupKey(req.projectId, req.provider), DAY_MS, 0, now);
    return Math.max(v.judged, v.fresh ? own : own * this.shared.nodes);
  }

  private counter(day: string, projectId: string, provider: string): Counter {
    const k = `${day}|${projectId}|${provider}`;
    let c = this.usage.get(k);
    if (!c) this.usage.set(k, (c = { transactional: 0, bulk: 0 }));
    return c;
  }

  decide(req: PaceRequest, wake: () => void): PaceDecision {
    const now = clock.now();
    this.held.delete(req.key);

    if (req.notBeforeMs > now && !this.retryNow.delete(req.key)) return this.hold(req, 'retry', req.notBeforeMs, wake);

    // A suspension (shaping or the operator's) holds it before anything counts it; a slot handed to it passes on.
    const stop = this.holds?.check(req.provider, req.projectId, now);
    if (stop) {
      this.leaveGate(req.key);
      const d = this.hold(req, stop.cause, stop.untilMs || now + SUSPENDED_RECHECK_MS, wake);
      return { ...d, rule: stop.rule, sinceMs: stop.sinceMs, holdUntilMs: stop.untilMs };
    }

    const day = dayOf(now);
    if (this.counted.get(req.key) !== day) {
      const c = this.counter(day, req.projectId, req.provider);
      const reserved = this.reservations.get(req.key);
      this.reservations.delete(req.key);
      if (req.bulk) {
        const norm = normFor(this.throttleOf(req.provider), warmupDay(req.warmupStartMs, now));
        if (reserved?.day === day) {
          // Already counted in Redis by prepare(), or refused there.
          if (!reserved.ok) return { ...this.hold(req, 'warmup', nextDayStart(now), wake), norm, used: reserved.used };
        } else {
          const used = this.usedToday(req, c, now);
          if (used >= norm) return { ...this.hold(req, 'warmup', nextDayStart(now), wake), norm, used };
          this.shared?.hit(warmupKey(req.projectId, req.provider), DAY_MS, req.recipients, now);
        }
        c.bulk += req.recipients;
      } else {
        c.transactional += req.recipients;
        this.shared?.hit(warmupKey(req.projectId, req.provider), DAY_MS, req.recipients, now);
      }
      this.counted.set(req.key, day);
      this.persist([
        { day, projectId: req.projectId, provider: req.provider, transactional: req.bulk ? 0 : req.recipients, bulk: req.bulk ? req.recipients : 0 },
      ]);
    }
    return this.admit(req, wake);
  }

  private hold(req: PaceRequest, kind: HoldKind, untilMs: number, wake: () => void): PaceDecision & { kind: 'hold' } {
    this.held.set(req.key, { kind, untilMs, projectId: req.projectId, provider: req.provider, bulk: req.bulk, wake });
    // Haraka's timer runs on real time; our clock may be ahead of it (tests), never behind.
    const delaySec = Math.max(1, Math.ceil((untilMs - clock.now()) / 1000));
    return { kind: 'hold', hold: kind, untilMs, delaySec };
  }

  /** An item stopped before its attempt: out of the gate's waits, and a slot pump() handed it freed. */
  private leaveGate(key: string): void {
    for (const g of this.gates.values()) {
      g.transactional.delete(key);
      g.bulk.delete(key);
    }
    this.waitingSince.delete(key);
    const name = this.admitted.get(key);
    if (name === undefined) return;
    this.admitted.delete(key);
    const g = this.gates.get(name);
    if (!g) return;
    g.inFlight = Math.max(0, g.inFlight - 1);
    this.pump(g);
  }

  private gateOf(req: Pick<PaceRequest, 'provider' | 'domain'>): Gate {
    const name = gateName(req);
    let g = this.gates.get(name);
    if (!g) {
      const t = this.throttleOf(req.provider);
      g = {
        name,
        inFlight: 0,
        tokens: Math.max(1, t.ratePerMinute / 60),
        refilledAt: Date.now(),
        transactional: new Map(),
        bulk: new Map(),
        fullUntil: 0,
        sent: [],
      };
      this.gates.set(name, g);
    }
    return g;
  }

  private limits(g: Gate): Throttle {
    return this.effective(g.name.startsWith(`${OTHER}:`) ? OTHER : g.name);
  }

  /** An attempt was let go through the gate. */
  private sentNow(g: Gate): void {
    const now = Date.now();
    g.sent.push(now);
    // Only the last minute is read; a gate never keeps more than that (or a bounded many).
    while (g.sent.length && (g.sent[0]! <= now - RATE_WINDOW_MS || g.sent.length > 100_000)) g.sent.shift();
  }

  /** Takes a token of the gate's rate, if one is there (real time: rates are about the wire). */
  private takeToken(g: Gate): boolean {
    const rate = this.limits(g).ratePerMinute;
    if (!rate) return true;
    const now = Date.now();
    const burst = Math.max(1, rate / 60);
    g.tokens = Math.min(burst, g.tokens + ((now - g.refilledAt) * rate) / 60_000);
    g.refilledAt = now;
    if (g.tokens < 1 || !this.sharedRateAllows(g, rate)) return false;
    g.tokens -= 1;
    this.shared?.hit(rateKey(g.name), RATE_WINDOW_MS, 1, clock.now());
    return true;
  }

  /** With shared counts: the gateways together are under the rate in this minute (at least our share while Redis is away). */
  private sharedRateAllows(g: Gate, rate: number): boolean {
    if (!this.shared) return true;
    const now = clock.now();
    const v = this.shared.hit(rateKey(g.name), RATE_WINDOW_MS, 0, now);
    if (v.judged < rate) return true;
    // A full minute frees nothing before it ends; a count judged with the others' assumed share, or not read lately, is looked at again soon.
    g.fullUntil = v.fresh && v.count >= rate ? v.resetAt : Math.min(v.resetAt, now + RECHECK_MS);
    return false;
  }

  /**
   * The gate of a destination, and how many more connections it may have open beside the attempts
   * holding a slot (Infinity without a limit; below 0 after the limit was lowered): idle
   * connections kept for reuse must fit in there.
   */
  connectionRoom(provider: string, domain: string): { gate: string; free: number } {
    const gate = gateName({ provider, domain });
    const max = this.effective(provider).connections;
    if (!max) return { gate, free: Infinity };
    return { gate, free: max - (this.gates.get(gate)?.inFlight ?? 0) };
  }

  /** The live state (gateway/state): per gate, attempts holding a slot and attempts let go in the last minute. */
  *gateFigures(): Iterable<{ gate: string; inFlight: number; lastMinute: number }> {
    const since = Date.now() - RATE_WINDOW_MS;
    for (const g of this.gates.values()) {
      let n = 0;
      for (let i = g.sent.length - 1; i >= 0 && g.sent[i]! > since; i--) n++;
      yield { gate: g.name, inFlight: g.inFlight, lastMinute: n };
    }
  }

  /** The live state: this gateway's counts of a day, per project and provider. */
  *usageOf(day: string): Iterable<{ projectId: string; provider: string; used: number }> {
    for (const [k, c] of this.usage) {
      if (!k.startsWith(`${day}|`)) continue;
      const [, projectId = '', provider = ''] = k.split('|');
      yield { projectId, provider, used: c.transactional + c.bulk };
    }
  }

  private hasSlot(g: Gate): boolean {
    const max = this.limits(g).connections;
    return !max || g.inFlight < max;
  }

  private admit(req: PaceRequest, wake: () => void): PaceDecision {
    const reserved = this.admitted.get(req.key);
    if (reserved !== undefined) {
      this.admitted.delete(req.key);
      this.slots.set(req.key, reserved);
      return { kind: 'go' };
    }
    const g = this.gateOf(req);
    const waiting = g.transactional.size + g.bulk.size > 0;
    const queue = req.bulk ? g.bulk : g.transactional;
    // Bulk never jumps ahead of mail already waiting; transactional only waits behind transactional.
    const ahead = req.bulk ? waiting && !queue.has(req.key) : g.transactional.size > 0 && !queue.has(req.key);
    if (!ahead && this.hasSlot(g) && this.takeToken(g)) {
      queue.delete(req.key);
      this.waitingSince.delete(req.key);
      g.inFlight++;
      this.sentNow(g);
      this.slots.set(req.key, g.name);
      return { kind: 'go' };
    }
    queue.set(req.key, wake);
    if (!this.waitingSince.has(req.key)) this.waitingSince.set(req.key, Date.now());
    this.schedulePump(g);
    return { ...this.hold(req, 'limit', clock.now() + LIMIT_RECHECK_MS, wake), waitedMs: Date.now() - this.waitingSince.get(req.key)! };
  }

  /** An attempt ended (delivered, deferred or bounced): its connection slot frees. */
  release(key: string): void {
    const name = this.slots.get(key);
    if (name === undefined) return;
    this.slots.delete(key);
    const g = this.gates.get(name);
    if (!g) return;
    g.inFlight = Math.max(0, g.inFlight - 1);
    this.pump(g);
  }

  /** The queue item is gone (delivered or bounced): forget it. */
  done(key: string): void {
    this.release(key);
    this.counted.delete(key);
    this.held.delete(key);
    this.waitingSince.delete(key);
    this.reservations.delete(key);
  }

  /**
   * The operator's send-now: scheduled retries of rejected recipients held here (of the provider and/or
   * project; '' = every one) go at once, their not_before ignored once; throttles and norms still apply
   * when they come back through decide(). Returns how many woke.
   */
  sendNow(provider: string, projectId: string): number {
    let woken = 0;
    for (const [key, h] of [...this.held]) {
      if (h.kind !== 'retry' || (provider && h.provider !== provider) || (projectId && h.projectId !== projectId)) continue;
      this.held.delete(key);
      this.retryNow.add(key);
      h.wake();
      woken++;
    }
    return woken;
  }

  /** The queue item was dropped unsent (an operator's cancel): it leaves every wait, and a slot handed to it frees. */
  forget(key: string): void {
    for (const g of this.gates.values()) {
      g.transactional.delete(key);
      g.bulk.delete(key);
    }
    const admitted = this.admitted.get(key);
    if (admitted !== undefined) {
      this.admitted.delete(key);
      this.slots.set(key, admitted);
    }
    this.retryNow.delete(key);
    this.done(key);
  }

  /** Hands free slots and tokens to waiting mail, transactional first. */
  private pump(g: Gate): void {
    while (g.transactional.size + g.bulk.size && this.hasSlot(g)) {
      if (!this.takeToken(g)) return this.schedulePump(g);
      const queue = g.transactional.size ? g.transactional : g.bulk;
      const [key, wake] = queue.entries().next().value as [string, () => void];
      queue.delete(key);
      this.held.delete(key);
      this.waitingSince.delete(key);
      g.inFlight++;
      this.sentNow(g);
      this.admitted.set(key, g.name);
      wake();
    }
  }

  /** Mail waits for a token of the rate: look again when the next one is due (a freed slot pumps by itself). */
  private schedulePump(g: Gate): void {
    if (g.timer || !(g.transactional.size + g.bulk.size) || !this.hasSlot(g)) return;
    const rate = this.limits(g).ratePerMinute;
    const full = g.fullUntil - clock.now();
    const wait = full > 0 ? full : rate ? Math.max(5, Math.ceil(((1 - g.tokens) * 60_000) / rate)) : 5;
    g.timer = setTimeout(() => {
      g.timer = undefined;
      this.pump(g);
    }, wait);
    g.timer.unref();
  }

  /**
   * Wakes held mail that is due by our clock (it moved, or a day began), or, with
   * `warmup`, all mail held by warm-up (norms changed; what is still over goes back).
   */
  reconsider(warmup = false): number {
    const now = clock.now();
    let woken = 0;
    for (const [key, h] of [...this.held]) {
      if (h.kind === 'limit') continue;
      if (h.untilMs <= now || (warmup && h.kind === 'warmup')) {
        this.held.delete(key);
        h.wake();
        woken++;
      }
    }
    return woken;
  }

  /** One project's counters for a day, per provider, with the bulk it has held by warm-up now. */
  stats(
    projectId: string,
    day: string,
    persisted: readonly UsageRow[] = [],
  ): Array<{ provider: string; transactional: number; bulk: number; heldBulk: number }> {
    const out = new Map<string, { provider: string; transactional: number; bulk: number; heldBulk: number }>();
    const row = (provider: string) => {
      let r = out.get(provider);
      if (!r) out.set(provider, (r = { provider, transactional: 0, bulk: 0, heldBulk: 0 }));
      return r;
    };
    const prefix = `${day}|${projectId}|`;
    let inMemory = false;
    for (const [k, c] of this.usage) {
      if (!k.startsWith(prefix)) continue;
      inMemory = true;
      const r = row(k.slice(prefix.length));
      r.transactional += c.transactional;
      r.bulk += c.bulk;
    }
    if (!inMemory) {
      for (const p of persisted) {
        if (p.projectId !== projectId) continue;
        const r = row(p.provider);
        r.transactional += p.transactional;
        r.bulk += p.bulk;
      }
    }
    if (day === dayOf(clock.now())) {
      for (const h of this.held.values()) if (h.kind === 'warmup' && h.projectId === projectId) row(h.provider).heldBulk++;
    }
    return [...out.values()];
  }

  /** Drops in-memory counters of days before `day`. */
  forgetBefore(day: string): void {
    for (const k of this.usage.keys()) if (k.slice(0, 10) < day) this.usage.delete(k);
  }

  get heldCount(): number {
    return this.held.size;
  }
}
