// The operator's controls as a gateway keeps them (SetControls from control, a full replacement):
// suspensions of delivery, handed to the delivery holds (rt.holds.setOperator), and cancel orders,
// under which mail of a project accepted at or before the order is never delivered: dropped unsent
// where the gateway holds it (deferred items, in one pass over Haraka's timer queue), before every
// attempt (the pacing hook asks verdict()), and at Enqueue. The last push is kept in the outbox
// settings, read at start before Haraka delivers anything.
//
// A gateway killed while an order was on its way may restart holding mail the order covers, and
// control's first push comes only once its event stream connects. So a gateway that has had
// controls before holds the mail it queued before this start until that push arrives, or 60 s
// pass (control unreachable): then it goes under the persisted controls.
import type { Logger } from '../../core/log.js';
import type { HarakaOutbound, HMailItem } from '../haraka.js';
import type { Outbox } from '../outbox/outbox.js';
import type { Pacer } from '../pacing/pacer.js';
import { gatewayRuntime } from '../runtime.js';

export interface OperatorSuspension {
  id: string;
  /** '' = every provider. */
  provider: string;
  /** '' = every project. */
  projectId: string;
  /** 0 = until resumed; else epoch ms. */
  untilMs: number;
  reason: string;
}

export interface CancelOrder {
  projectId: string;
  acceptedBeforeMs: number;
  orderedMs: number;
}

export interface Controls {
  suspensions: OperatorSuspension[];
  cancels: CancelOrder[];
}

/** The items the gateway holds, by filename (the state tracker's registry, rt.queueState). */
export interface QueueItems {
  itemsWhere(filter: { provider?: string; projectId?: string; states?: string[] }): Iterable<HMailItem>;
  forget?(hmail: HMailItem): void;
}

/** The delivery holds (rt.holds): the operator's suspensions replace the last ones. */
export interface OperatorHolds {
  setOperator(list: OperatorSuspension[]): void;
}

/** What the gateway's runtime offers the controls; the registry and holds are read at each use. */
export interface ControlsDeps {
  outbox: Outbox;
  log: Logger;
  pacer: Pacer;
  queueState?: QueueItems;
  holds?: OperatorHolds;
}

/** Haraka's timer queue of delayed and temp-failed items (haraka-utils TimerQueue): its array is filtered in place of discard(), O(n) per item. */
interface TimerQueue {
  queue: Array<{ id: string; cb: (() => void) | null }>;
}

export const CONTROLS_SETTING = 'controls';
/** As long as control keeps a cancel order (control/operations/controls.ts). */
const CANCEL_ORDERS_KEPT_MS = 14 * 86_400_000;
/** How long a restarted gateway waits for control's push before it goes by the persisted controls. */
export const START_HOLD_MS = 60_000;
/** What a dropped or waiting item is DELAYed for (it is taken off the timer queue long before). */
const PARKED_SEC = 3600;

export type Verdict = 'go' | 'drop' | 'wait';

export class GatewayControls {
  /** Project id → the latest accepted_before of its cancel orders. */
  private cancelBefore = new Map<string, number>();
  private suspensions: OperatorSuspension[] = [];
  private cancels: CancelOrder[] = [];
  /** When this process started: items queued before it may be covered by an order it missed. */
  readonly startedAt = Date.now();
  private gateOpen = true;
  private gateTimer?: NodeJS.Timeout;
  /** Items the start gate holds, by filename. */
  private readonly waiting = new Map<string, HMailItem>();
  /** Items to drop at the next flush (they have just been DELAYed onto the timer queue). */
  private readonly dropping = new Map<string, HMailItem>();
  private flushScheduled = false;
  private outbound?: HarakaOutbound;

  constructor(private readonly deps: ControlsDeps) {}

  /** Reads the persisted controls (at start, before Haraka delivers): a gateway that had controls holds its older mail for the first push. */
  async load(): Promise<void> {
    const saved = await this.deps.outbox.setting(CONTROLS_SETTING);
    if (!saved) return;
    this.apply(JSON.parse(saved) as Controls);
    this.gateOpen = false;
    this.gateTimer = setTimeout(() => {
      this.deps.log.warn({ waited: START_HOLD_MS / 1000, held: this.waiting.size }, 'no queue controls from control since start; going by the persisted ones');
      this.openGate();
    }, START_HOLD_MS);
    this.gateTimer.unref();
  }

  /** Haraka's outbound module, once the pacing plugin has it (the timer and delivery queues). */
  attach(outbound: HarakaOutbound): void {
    this.outbound = outbound;
  }

  /** Mail of the project accepted at or before its latest cancel order (an unknown time, 0, counts as before). */
  isCanceled(projectId: string, acceptedMs: number): boolean {
    const before = this.cancelBefore.get(projectId);
    return before !== undefined && acceptedMs <= before;
  }

  /** Before an attempt: go on, drop it (canceled), or wait for control's first push (queued before this start). */
  verdict(hmail: HMailItem): Verdict {
    const notes = hmail.todo.notes;
    if (this.isCanceled(String(notes.project_id ?? ''), Number(notes.accepted_ms) || 0)) return 'drop';
    if (!this.gateOpen && hmail.todo.queue_time < this.startedAt) return 'wait';
    return 'go';
  }

  /** The DELAY the hook answers for an item it drops or parks (taken off the timer queue at once). */
  get parkedSec(): number {
    return PARKED_SEC;
  }

  /** The items the gateway holds of a project and/or provider (the state tracker's registry). */
  private items(filter: { provider?: string; projectId?: string }): Iterable<HMailItem> {
    return this.deps.queueState?.itemsWhere(filter) ?? [];
  }

  /** The hook answered DELAY for a canceled item: it leaves the timer queue and its file goes, unsent. */
  drop(hmail: HMailItem): void {
    this.dropping.set(hmail.filename, hmail);
    this.scheduleFlush();
  }

  /** The hook answered DELAY for an item the start gate holds: it goes again once the gate opens. */
  park(hmail: HMailItem): void {
    if (this.gateOpen) return void this.wake([hmail]);
    this.waiting.set(hmail.filename, hmail);
  }

  /**
   * A push from control: stored (so a restart goes by it), applied, the start gate opened, and what the
   * gateway holds of canceled mail dropped. Returns how many queue items it dropped now.
   */
  async set(pushed: Controls): Promise<number> {
    // Cancel orders only ever add up (control keeps each 14 days): kept as a union, so a push read before
    // the last order (two controls pushing at once) cannot take an order back.
    const kept = Date.now() - CANCEL_ORDERS_KEPT_MS;
    const orders = new Map<string, CancelOrder>();
    for (const o of [...this.cancels, ...pushed.cancels]) if (o.orderedMs >= kept) orders.set(`${o.projectId} ${o.acceptedBeforeMs}`, o);
    const c = { suspensions: pushed.suspensions, cancels: [...orders.values()] };
    await this.deps.outbox.putSetting(CONTROLS_SETTING, JSON.stringify(c));
    this.apply(c);
    const dropped = this.dropHeld();
    this.openGate();
    return dropped;
  }

  private apply(c: Controls): void {
    const before = new Map<string, number>();
    for (const o of c.cancels) before.set(o.projectId, Math.max(before.get(o.projectId) ?? 0, o.acceptedBeforeMs));
    this.cancelBefore = before;
    this.cancels = c.cancels;
    this.suspensions = c.suspensions;
    this.applySuspensions();
  }

  /** The delivery holds take them as they are: they end each one at its time. */
  private applySuspensions(): void {
    if (this.deps.holds) this.deps.holds.setOperator(this.suspensions);
    else if (this.suspensions.length)
      this.deps.log.warn({ suspensions: this.suspensions.length }, 'operator suspensions given, but no delivery holds to apply them');
  }

  /** The deferred items the registry knows of canceled mail: off the timer queue in one pass, then their files removed. */
  private dropHeld(): number {
    if (!this.cancelBefore.size) return 0;
    const victims = new Map<string, HMailItem>();
    for (const projectId of this.cancelBefore.keys())
      for (const hmail of this.items({ projectId })) if (this.verdict(hmail) === 'drop') victims.set(hmail.filename, hmail);
    return this.discard(victims);
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      const items = new Map(this.dropping);
      this.dropping.clear();
      this.discard(items);
    });
  }

  /**
   * Removes the items that are on the timer queue from it (one pass) and deletes their queue files.
   * An item not there is in delivery or on its way to the pacing hook, which drops it; one on the wire
   * already is left to its answer.
   */
  private discard(items: Map<string, HMailItem>): number {
    const removed = this.offTimers(items);
    for (const hmail of removed) {
      this.deps.pacer.forget(hmail.todo.uuid);
      this.deps.queueState?.forget?.(hmail);
      // Its delivery turn ended when it was DELAYed: discard() must not end it twice.
      (hmail as HMailItem & { next_cb: () => void }).next_cb = () => {};
      (hmail as unknown as { discard(): void }).discard();
    }
    if (removed.length) this.deps.log.info({ dropped: removed.length }, 'canceled mail dropped unsent');
    return removed.length;
  }

  private openGate(): void {
    clearTimeout(this.gateTimer);
    if (this.gateOpen) return;
    this.gateOpen = true;
    const items = [...this.waiting.values()];
    this.waiting.clear();
    // What an order covers is dropped here, the rest goes to delivery.
    this.discard(new Map(items.filter((h) => this.verdict(h) === 'drop').map((h) => [h.filename, h])));
    this.wake(items.filter((h) => this.verdict(h) !== 'drop'));
  }

  /** Items on the timer queue go to delivery now (one pass); each still meets the pacing hook. */
  private wake(items: HMailItem[]): number {
    const woken = this.offTimers(new Map(items.map((h) => [h.filename, h])));
    for (const hmail of woken) this.outbound!.delivery_queue.push(hmail);
    return woken.length;
  }

  /** Takes the named items off Haraka's timer queue in one pass (discard() per item scans it each time); those that were on it. */
  private offTimers(byName: ReadonlyMap<string, HMailItem>): HMailItem[] {
    if (!byName.size || !this.outbound) return [];
    const tq = this.outbound.temp_fail_queue as unknown as TimerQueue;
    const taken: HMailItem[] = [];
    tq.queue = tq.queue.filter((t) => {
      const hmail = byName.get(t.id);
      if (!hmail) return true;
      t.cb = null;
      taken.push(hmail);
      return false;
    });
    return taken;
  }

  /**
   * The operator's send-now: deferred items of the provider and/or project ('' = every one) go to
   * delivery at once, and scheduled retries the Pacer holds ignore their time once. Throttles, norms
   * and holds still apply: each item meets the pacing hook again. Returns how many woke.
   */
  sendNow(provider: string, projectId: string): number {
    const woken = this.deps.pacer.sendNow(provider, projectId);
    const items = [...this.items({ ...(provider ? { provider } : {}), ...(projectId ? { projectId } : {}) })];
    return woken + this.wake(items);
  }
}

let instance: Promise<GatewayControls> | undefined;

/** The gateway process's controls, loaded once from the outbox (the pacing plugin and the gRPC service share them). */
export function gatewayControls(): Promise<GatewayControls> {
  return (instance ??= gatewayRuntime().then(async (rt) => {
    const controls = new GatewayControls(rt);
    await controls.load();
    return controls;
  }));
}
