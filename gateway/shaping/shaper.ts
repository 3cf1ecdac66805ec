// Adaptive shaping on the gateway: each remote answer (deferred, bounced, rejected) is matched
// against the rules (common/shaping.ts: the defaults with the operator's from the config), and a
// matching rule's action is taken for its duration: a lowered rate or connection limit (an overlay
// in the Pacer, effective at once), or a suspension of the provider or of the project at it (the
// delivery holds, which the Pacer consults before each attempt). An action already in force for
// the same rule and scope is extended, not taken again; each is logged once when taken and once
// when it ends, and everything comes back by itself at the end.
//
// The actions in force are kept in the outbox settings (`save`), so a restarted gateway holds
// them still. With Redis, an action taken on one gateway holds on every gateway: it is stored under a key
// that expires with it and published; the other gateways apply it as theirs (without logging it
// as taken), and a gateway starting, or back on Redis, loads the ones in force.
import { clock } from '../../core/clock.js';
import type { ShapingAction, ShapingRule } from '../../core/config.js';
import type { Logger } from '../../core/log.js';
import type { RedisLink } from '../../core/redis.js';
import { type CompiledRule, compileRules, matchRules, type RemoteAnswer } from '../../common/shaping.js';
import type { Pacer } from '../pacing/pacer.js';
import type { DeliveryHolds } from './holds.js';

/** An action in force (what the live state, the metrics and the events show). */
export interface ActiveAction {
  rule: string;
  provider: string;
  /** The project whose mail drew the answer, for a suspension of that project; '' otherwise. */
  projectId: string;
  action: ShapingAction;
  /** The lowered rate (per minute) or connections; 0 for a suspension. */
  value: number;
  sinceMs: number;
  untilMs: number;
  /** The answer that drew it. */
  trigger: string;
}

export interface ShaperDeps {
  rules: readonly ShapingRule[];
  pacer: Pacer;
  holds: DeliveryHolds;
  log: Logger;
  /** Shares actions with the other gateways; none: this gateway alone. */
  redis?: RedisLink;
  /** Keeps the actions in force (JSON) across a restart: the outbox's settings. */
  save?: (json: string) => Promise<void>;
}

/** An answer the events hooks saw, with the project whose mail drew it. */
export interface ObservedAnswer extends RemoteAnswer {
  projectId: string;
}

const keyOf = (a: Pick<ActiveAction, 'rule' | 'provider' | 'projectId'>) => `${a.rule}|${a.provider}|${a.projectId}`;
/** An action in force is extended only by this much or more. */
const EXTEND_STEP_MS = 1000;
/** A trigger kept in logs, events and Redis is cut here. */
const TRIGGER_MAX = 300;

export class Shaper {
  private readonly rules: CompiledRule[];
  private readonly active = new Map<string, ActiveAction>();
  private timer?: NodeJS.Timeout;
  private sub?: RedisLink;
  private readonly node = `${process.pid}-${Math.random().toString(36).slice(2, 10)}`;

  constructor(private readonly deps: ShaperDeps) {
    this.rules = compileRules(deps.rules);
  }

  get ruleCount(): number {
    return this.rules.length;
  }

  /** The actions in force. */
  actions(): ActiveAction[] {
    const now = clock.now();
    return [...this.active.values()].filter((a) => a.untilMs > now).map((a) => ({ ...a }));
  }

  /** A remote answer: each matching rule's action is taken (or, in force already, extended). Returns the actions taken or extended. */
  observe(answer: ObservedAnswer): ActiveAction[] {
    if (!this.rules.length || !answer.response) return [];
    const now = clock.now();
    const out: ActiveAction[] = [];
    for (const rule of matchRules(this.rules, answer)) {
      const ofProject = rule.action.kind === 'suspend' && rule.action.scope === 'project';
      // Mail of no project (none known) must not turn a project's suspension into the whole provider's.
      if (ofProject && !answer.projectId) continue;
      const a: ActiveAction = {
        rule: rule.name,
        provider: answer.provider,
        projectId: ofProject ? answer.projectId : '',
        action: rule.action,
        value: 0,
        sinceMs: now,
        untilMs: now + rule.durationSeconds * 1000,
        trigger: answer.response.slice(0, TRIGGER_MAX),
      };
      const taken = this.take(a, 'answer');
      if (taken) {
        out.push(taken);
        this.share(taken);
      }
    }
    return out;
  }

  /**
   * Takes an action, or extends the one in force for the same rule and scope. `from` 'answer': drawn by an
   * answer here (its value is computed here and it is logged as taken); 'peer' (another gateway's) and
   * 'restart' (saved before a restart) are applied as given.
   * Returns the action in force, or undefined when nothing changed.
   */
  private take(a: ActiveAction, from: 'answer' | 'peer' | 'restart'): ActiveAction | undefined {
    const key = keyOf(a);
    const now = clock.now();
    if (a.untilMs <= now) return undefined;
    const current = this.active.get(key);
    if (current && current.untilMs > now) {
      // A storm of the same answer extends it (and tells the other gateways) at most once a second.
      if (a.untilMs < current.untilMs + EXTEND_STEP_MS) return undefined;
      current.untilMs = a.untilMs;
      this.enforce(current);
      this.save();
      return current;
    }
    if (from === 'answer' && a.action.kind !== 'suspend') {
      const act = a.action;
      a.value = act.value ?? Math.max(1, Math.floor(this.deps.pacer.shapingBase(a.provider, act.kind) * act.factor!));
    }
    this.active.set(key, a);
    this.enforce(a);
    this.save();
    const fields = {
      rule: a.rule,
      provider: a.provider,
      project: a.projectId || undefined,
      action: a.action.kind,
      value: a.value || undefined,
      until: new Date(a.untilMs).toISOString(),
    };
    if (from === 'answer') this.deps.log.warn({ ...fields, trigger: a.trigger }, 'shaping: action taken');
    else if (from === 'peer') this.deps.log.info(fields, 'shaping: action taken by another gateway applied');
    else this.deps.log.info(fields, 'shaping: action in force before the restart holds again');
    return a;
  }

  /** Puts an action in force where it acts: the holds (suspend) or the Pacer's limits. */
  private enforce(a: ActiveAction): void {
    const key = keyOf(a);
    if (a.action.kind === 'suspend')
      this.deps.holds.setShaping(key, {
        cause: 'shaping',
        rule: a.rule,
        provider: a.provider,
        projectId: a.projectId,
        untilMs: a.untilMs,
        sinceMs: a.sinceMs,
        reason: a.trigger,
      });
    else this.deps.pacer.setShapingLimit(a.provider, key, { [a.action.kind === 'rate' ? 'rate' : 'connections']: a.value, untilMs: a.untilMs });
    this.schedule();
  }

  /** Ends the actions whose time is over (their limits and holds come back), then waits for the next end. */
  private expire(): void {
    const now = clock.now();
    let ended = false;
    for (const [key, a] of this.active) {
      if (a.untilMs > now) continue;
      ended = true;
      this.active.delete(key);
      if (a.action.kind === 'suspend') this.deps.holds.setShaping(key, undefined);
      else this.deps.pacer.setShapingLimit(a.provider, key, undefined);
      this.deps.log.info({ rule: a.rule, provider: a.provider, project: a.projectId || undefined, action: a.action.kind }, 'shaping: action ended');
    }
    if (ended) this.save();
    this.schedule();
  }

  /** Writes the actions in force for a restart (a failure is logged: the actions hold in memory all the same). */
  private save(): void {
    this.deps.save?.(JSON.stringify([...this.active.values()])).catch((err) => this.deps.log.error({ err }, 'shaping: could not save the actions in force'));
  }

  /** The actions saved before a restart: those still in force hold again (not logged as taken again). */
  restore(saved: string | undefined): number {
    if (!saved) return 0;
    let n = 0;
    try {
      for (const raw of JSON.parse(saved) as unknown[]) {
        const a = Shaper.parse(raw);
        if (a && this.take(a, 'restart')) n++;
      }
    } catch (err) {
      this.deps.log.warn({ err }, 'shaping: the saved actions could not be read; none restored');
    }
    return n;
  }

  /** A timer for the next end (real time: our clock may run ahead of it in tests, never behind; tick() covers a moved clock). */
  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.active.size) return;
    const next = Math.min(...[...this.active.values()].map((a) => a.untilMs));
    this.timer = setTimeout(() => this.expire(), Math.max(10, next - clock.now() + 5));
    this.timer.unref();
  }

  /** Our clock moved (tests): actions it passed end now. */
  tick(): void {
    this.expire();
  }

  // --- Sharing through Redis ------------------------------------------------------------------

  private channel(): string {
    return this.deps.redis!.key('shaping');
  }

  private actionKey(a: ActiveAction): string {
    return this.deps.redis!.key(`shaping:action:${keyOf(a)}`);
  }

  /** Stores the action until it ends and tells the other gateways. Never fails: without Redis each gateway acts on what it sees. */
  private share(a: ActiveAction): void {
    const redis = this.deps.redis;
    if (!redis?.up) return;
    const ttl = Math.max(1, a.untilMs - clock.now());
    const body = JSON.stringify(a);
    redis.client
      .multi()
      .set(this.actionKey(a), body, 'PX', ttl)
      .publish(this.channel(), JSON.stringify({ node: this.node, action: a }))
      .exec()
      .catch((err) => redis.failed(err));
  }

  /** An action read from Redis, if it is one. */
  private static parse(raw: unknown): ActiveAction | undefined {
    const a = raw as ActiveAction;
    if (!a || typeof a !== 'object' || typeof a.rule !== 'string' || typeof a.provider !== 'string' || typeof a.projectId !== 'string') return undefined;
    if (typeof a.untilMs !== 'number' || typeof a.sinceMs !== 'number' || typeof a.value !== 'number' || !a.action || typeof a.action.kind !== 'string')
      return undefined;
    return { ...a, trigger: String(a.trigger ?? '').slice(0, TRIGGER_MAX) };
  }

  /** Applies the other gateways' actions as they are published, and loads those in force (at start and each time Redis is back). */
  async start(): Promise<void> {
    const redis = this.deps.redis;
    if (!redis) return;
    const sub = (this.sub = redis.duplicate('shaping'));
    sub.client.on('message', (ch: string, raw: string) => {
      if (ch !== this.channel()) return;
      try {
        const msg = JSON.parse(raw) as { node?: string; action?: unknown };
        const a = Shaper.parse(msg.action);
        if (a && msg.node !== this.node) this.take(a, 'peer');
      } catch {
        // Not ours to read.
      }
    });
    // Each (re)connection: subscribe, learn what the others took meanwhile, and tell them what we took while away.
    sub.client.on('ready', () => {
      sub.client
        .subscribe(this.channel())
        .then(() => this.load())
        .then(() => {
          for (const a of this.actions()) this.share(a);
        })
        .catch((err) => sub.failed(err));
    });
    redis.onClose(() => this.close());
    if (redis.up) await this.load();
  }

  /** Loads the actions in force from Redis. */
  async load(): Promise<number> {
    const redis = this.deps.redis;
    if (!redis?.up) return 0;
    let loaded = 0;
    try {
      let cursor = '0';
      do {
        const [next, keys] = await redis.client.scan(cursor, 'MATCH', redis.key('shaping:action:*'), 'COUNT', 200);
        cursor = next;
        if (!keys.length) continue;
        for (const raw of await redis.client.mget(...keys)) {
          if (!raw) continue;
          const a = Shaper.parse(JSON.parse(raw));
          if (a && this.take(a, 'peer')) loaded++;
        }
      } while (cursor !== '0');
    } catch (err) {
      redis.failed(err);
      this.deps.log.warn({ err }, 'shaping: could not load the actions of the other gateways');
    }
    return loaded;
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    const sub = this.sub;
    this.sub = undefined;
    await sub?.close();
  }
}
