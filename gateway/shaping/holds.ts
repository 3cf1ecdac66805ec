// The delivery holds: the one place that says whether mail of a provider and project is stopped
// now, and why — a shaping rule's suspension (gateway/shaping/shaper.ts) or the operator's
// (SetControls, gateway/controls/controls.ts, through setOperator). The Pacer asks check() in
// decide() and is told through onChange() when a hold ends or is lifted, to wake what it held.
import { clock } from '../../core/clock.js';

export type HoldCause = 'shaping' | 'suspended';

export interface DeliveryHold {
  cause: HoldCause;
  /** The shaping rule's name, or `operator:<suspension id>`. */
  rule: string;
  /** '' = every provider. */
  provider: string;
  /** '' = every project. */
  projectId: string;
  /** When the hold ends (epoch ms, our clock); 0 = until resumed. */
  untilMs: number;
  /** When it began (a shaping action; 0 for the operator's): with rule, what the held mail reports once. */
  sinceMs: number;
  reason: string;
}

/** An operator's suspension as SetControls gives it (gateway/controls/controls.ts OperatorSuspension). */
export interface OperatorSuspensionLike {
  id: string;
  provider: string;
  projectId: string;
  untilMs: number;
  reason: string;
}

const inForce = (h: DeliveryHold, now: number) => h.untilMs === 0 || h.untilMs > now;
const covers = (h: DeliveryHold, provider: string, projectId: string) =>
  (!h.provider || h.provider === provider) && (!h.projectId || h.projectId === projectId);

export class DeliveryHolds {
  private operator: DeliveryHold[] = [];
  /** Shaping suspensions by their action's key (rule|provider|project). */
  private readonly shaping = new Map<string, DeliveryHold>();
  private readonly listeners: Array<() => void> = [];
  private timer?: NodeJS.Timeout;

  /** The operator's suspensions, a full replacement (control pushes them all at each change). */
  setOperator(list: readonly OperatorSuspensionLike[]): void {
    this.operator = list.map((s) => ({
      cause: 'suspended',
      rule: `operator:${s.id}`,
      provider: s.provider,
      projectId: s.projectId,
      untilMs: s.untilMs,
      sinceMs: 0,
      reason: s.reason,
    }));
    this.changed();
  }

  /** A shaping suspension starts, is extended (same key) or ends (undefined). */
  setShaping(key: string, hold: DeliveryHold | undefined): void {
    if (hold) this.shaping.set(key, hold);
    else if (!this.shaping.delete(key)) return;
    this.changed();
  }

  /**
   * The hold that stops this provider's mail of this project now, if any: the operator's before a
   * rule's (an operator's word outranks), then the one that ends last.
   */
  check(provider: string, projectId: string, now = clock.now()): DeliveryHold | undefined {
    let found: DeliveryHold | undefined;
    for (const list of [this.operator, this.shaping.values()]) {
      for (const h of list) {
        if (!inForce(h, now) || !covers(h, provider, projectId)) continue;
        if (!found || h.untilMs === 0 || (found.untilMs !== 0 && h.untilMs > found.untilMs)) found = h;
      }
      if (found) return found;
    }
    return undefined;
  }

  /** Every hold in force. */
  list(now = clock.now()): DeliveryHold[] {
    return [...this.operator, ...this.shaping.values()].filter((h) => inForce(h, now));
  }

  /** fn runs when holds were set, lifted or ended: held mail may go now. */
  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }

  /** Tells the listeners, and sets a timer for the next hold to end. */
  private changed(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const now = clock.now();
    for (const [key, h] of this.shaping) if (!inForce(h, now)) this.shaping.delete(key);
    for (const fn of this.listeners) fn();
    const ends = this.list(now)
      .map((h) => h.untilMs)
      .filter((u) => u > 0);
    if (!ends.length) return;
    // Real time: our clock may run ahead of it (tests), never behind; the Pacer's reconsider() covers a moved clock.
    this.timer = setTimeout(() => this.changed(), Math.max(10, Math.min(...ends) - now + 5));
    this.timer.unref();
  }
}
