// The live delivery state of one gateway (rt.queueState), kept as queue items change: the hooks
// tell it when an item is queued, decided, sent, deferred or finished, and it moves one count.
// Nothing here scans the queue: a read costs providers × projects (plus the minute buckets of
// the windows), whatever the queue holds.
//
// It also keeps the items themselves grouped by provider and project, so an operator's cancel or
// send-now (gateway/controls) finds a project's items without a scan. Items are known by their
// object, not their file name: Haraka renames the file at each deferral, after our hook ran.
import { OTHER, providerOfDomain } from '../../common/providers.js';
import {
  DEFER_CAUSES,
  type AnswerFigures,
  type DeferCause,
  type DeliverySeries,
  HOUR_MS,
  MINUTE_MS,
  noSeries,
  noOutcomes,
  noQueue,
  noWindows,
  type Outcomes,
  type QueueFigures,
  type WindowFigures,
} from '../../common/delivery-state.js';
import { clock } from '../../core/clock.js';
import type { HMailItem } from '../haraka.js';
import type { NewDeliveryEvent } from '../outbox/outbox.js';
import type { HoldKind } from '../pacing/pacer.js';
import { PROVIDER } from '../outcome.js';

/** Where an item is: ready (due, not yet decided), in flight (an attempt under way), or deferred by a cause. */
export type ItemState = 'ready' | 'in_flight' | DeferCause;

/** A state filter of itemsWhere: a state, or 'deferred' for every cause. */
export type StateFilter = ItemState | 'deferred';

interface Entry {
  hmail: HMailItem;
  state: ItemState;
  group: Group;
  /** When control accepted the message (0: unknown, a file from before contract 4). */
  acceptedMs: number;
}

interface Group {
  provider: string;
  projectId: string;
  items: Set<Entry>;
  counts: QueueFigures;
  /** The oldest acceptedMs of the items (0: none); stale once the item holding it left, found again when read. */
  oldestMs: number;
  oldestStale: boolean;
}

interface Bucket {
  /** provider \t project → outcomes. */
  figures: Map<string, Outcomes>;
}

interface Answers {
  enhancedCode: string;
  sample: string;
  lastAtMs: number;
  /** Minute → count, the last hour only. */
  perMinute: Map<number, number>;
}

/** Answer groups kept per provider: enhanced codes are few; past this the oldest group goes. */
const ANSWER_GROUPS = 64;
const SAMPLE_CHARS = 300;
/** Domains whose provider the pacing hook found by their MX, remembered for items not yet decided. */
const DOMAINS_KEPT = 10_000;

export type WindowOutcome = keyof Outcomes;

/** The state of an item the Pacer holds: warm-up is `volume`, a rejected recipient's scheduled retry is the receiver's. */
export function holdState(hold: HoldKind): DeferCause {
  switch (hold) {
    case 'warmup':
      return 'volume';
    case 'retry':
      return 'receiver';
    case 'limit':
      return 'pacing';
    default:
      return hold;
  }
}

const WINDOW_OF: Partial<Record<NewDeliveryEvent['type'], WindowOutcome>> = {
  sent: 'delivered',
  deferred: 'deferred',
  bounced: 'bounced',
  rejected: 'bounced',
  complained: 'complained',
};

export class QueueState {
  private readonly items = new Map<HMailItem, Entry>();
  private readonly groups = new Map<string, Group>();
  private readonly domains = new Map<string, string>();
  /** Minute buckets for the last hour; hour buckets for the last day (sparse: only when something happened). */
  private readonly minutes = new Map<number, Bucket>();
  private readonly hours = new Map<number, Bucket>();
  private readonly answers = new Map<string, Map<string, Answers>>();
  /** Grows at each outcome or answer counted: whether the windows changed since they were last saved. */
  revision = 0;
  /** Day 1 of a project's warm-up, as its items carry it (the norm of the day is read from it). */
  readonly warmupStart = new Map<string, number>();

  constructor(
    /** The label of a provider: a name we know, else `other` (gateway/metrics.ts provider()). */
    private readonly label: (name: string) => string = (n) => n,
  ) {}

  private providerOf(hmail: HMailItem, known?: string): string {
    if (known) return this.label(known);
    const domain = (hmail.todo?.domain ?? '').toLowerCase();
    return this.label(providerOfDomain(domain) ?? this.domains.get(domain) ?? OTHER);
  }

  private group(provider: string, projectId: string): Group {
    const k = `${provider}\t${projectId}`;
    let g = this.groups.get(k);
    if (!g) this.groups.set(k, (g = { provider, projectId, items: new Set(), counts: noQueue(), oldestMs: 0, oldestStale: false }));
    return g;
  }

  private static join(g: Group, e: Entry): void {
    g.items.add(e);
    if (e.acceptedMs && !g.oldestStale && (!g.oldestMs || e.acceptedMs < g.oldestMs)) g.oldestMs = e.acceptedMs;
  }

  private static leave(g: Group, e: Entry): void {
    g.items.delete(e);
    if (e.acceptedMs && e.acceptedMs === g.oldestMs) g.oldestStale = true;
  }

  /** The oldest accepted time of a group's items: kept as items join, scanned again only after the oldest left. */
  private static oldest(g: Group): number {
    if (g.oldestStale) {
      let min = 0;
      for (const e of g.items) if (e.acceptedMs && (!min || e.acceptedMs < min)) min = e.acceptedMs;
      g.oldestMs = min;
      g.oldestStale = false;
    }
    return g.oldestMs;
  }

  private static count(q: QueueFigures, state: ItemState, by: number): void {
    if (state === 'ready') q.ready += by;
    else if (state === 'in_flight') q.inFlight += by;
    else q.deferred[state] += by;
  }

  /** Puts an item in a state (adding it when it is new), under its provider (the one given, else the one its domain names). */
  private set(hmail: HMailItem, state: ItemState, provider?: string): void {
    if (!hmail.todo) return;
    const projectId = String(hmail.todo.notes.project_id ?? '');
    const p = this.providerOf(hmail, provider);
    let e = this.items.get(hmail);
    const g = e && e.group.provider === p && e.group.projectId === projectId ? e.group : this.group(p, projectId);
    if (e) {
      QueueState.count(e.group.counts, e.state, -1);
      if (e.group !== g) {
        QueueState.leave(e.group, e);
        this.dropEmpty(e.group);
        QueueState.join(g, e);
        e.group = g;
      }
      e.state = state;
    } else {
      e = { hmail, state, group: g, acceptedMs: Number(hmail.todo.notes.accepted_ms) || 0 };
      this.items.set(hmail, e);
      QueueState.join(g, e);
      const start = Number(hmail.todo.notes.warmup_start) || 0;
      if (projectId && start) this.warmupStart.set(projectId, start);
    }
    QueueState.count(g.counts, state, 1);
  }

  private dropEmpty(g: Group): void {
    if (g.items.size) return;
    this.groups.delete(`${g.provider}\t${g.projectId}`);
  }

  /** The item is on Haraka's delivery queue (new, due again, or woken). Its todo may still be loading (queue load at start). */
  queued(hmail: HMailItem): void {
    if (hmail.todo) return this.set(hmail, 'ready', this.known(hmail));
    (hmail as unknown as { once?(ev: string, fn: () => void): void }).once?.('ready', () => {
      // Still ours unless it moved on meanwhile.
      if (!this.items.has(hmail)) this.set(hmail, 'ready');
    });
  }

  /** The item waits on Haraka's timer queue for a cause (a deferral, a hold of the pacing hook). */
  deferred(hmail: HMailItem, cause: DeferCause, provider?: string): void {
    this.set(hmail, cause, provider ?? this.known(hmail));
  }

  /** The pacing hook found the provider of the item's domain (and let it go: still ready until its attempt starts). */
  decided(hmail: HMailItem, provider: string): void {
    const domain = hmail.todo.domain.toLowerCase();
    if (!providerOfDomain(domain)) {
      if (this.domains.size >= DOMAINS_KEPT && !this.domains.has(domain)) this.domains.delete(this.domains.keys().next().value!);
      this.domains.set(domain, provider);
    }
    this.set(hmail, 'ready', provider);
  }

  /** An SMTP attempt for the item started. */
  sending(hmail: HMailItem): void {
    this.set(hmail, 'in_flight', this.known(hmail));
  }

  /** The item is gone: delivered, bounced, dropped (an operator's cancel). */
  forget(hmail: HMailItem): void {
    const e = this.items.get(hmail);
    if (!e) return;
    this.items.delete(hmail);
    QueueState.count(e.group.counts, e.state, -1);
    QueueState.leave(e.group, e);
    this.dropEmpty(e.group);
  }

  /** The provider an item was last counted under. */
  private known(hmail: HMailItem): string | undefined {
    return this.items.get(hmail)?.group.provider;
  }

  /** The items the gateway holds of a provider and/or project, in the given states. */
  *itemsWhere(filter: { provider?: string; projectId?: string; states?: readonly string[] } = {}): Iterable<HMailItem> {
    const states = filter.states?.length ? new Set(filter.states) : undefined;
    const provider = filter.provider ? this.label(filter.provider) : undefined;
    for (const g of [...this.groups.values()]) {
      if (provider !== undefined && g.provider !== provider) continue;
      if (filter.projectId !== undefined && filter.projectId !== '' && g.projectId !== filter.projectId) continue;
      for (const e of [...g.items]) {
        if (states && !states.has(e.state) && !(states.has('deferred') && e.state !== 'ready' && e.state !== 'in_flight')) continue;
        yield e.hmail;
      }
    }
  }

  get size(): number {
    return this.items.size;
  }

  /** The queue counts per provider and project (cheap: one entry per pair with items). */
  *counts(): Iterable<{ provider: string; projectId: string; queue: QueueFigures; oldestAcceptedMs: number }> {
    for (const g of this.groups.values()) yield { provider: g.provider, projectId: g.projectId, queue: g.counts, oldestAcceptedMs: QueueState.oldest(g) };
  }

  /** The queue counts per provider (gateway/metrics.ts QueueCounts). */
  byProvider(): Array<{ provider: string; ready: number; inFlight: number; deferred: Record<DeferCause, number> }> {
    const out = new Map<string, { provider: string; ready: number; inFlight: number; deferred: Record<DeferCause, number> }>();
    for (const g of this.groups.values()) {
      let t = out.get(g.provider);
      if (!t) out.set(g.provider, (t = { provider: g.provider, ...noQueue() }));
      t.ready += g.counts.ready;
      t.inFlight += g.counts.inFlight;
      for (const c of DEFER_CAUSES) t.deferred[c] += g.counts.deferred[c];
    }
    return [...out.values()];
  }

  /**
   * The events an attempt's outcome wrote (delivered, deferred, bounce hooks) or an inbound report
   * recorded: one count per recipient in the windows, and the receiver's answers by enhanced code.
   */
  observe(events: readonly NewDeliveryEvent[], hmail?: HMailItem): void {
    const now = clock.now();
    const projectId = hmail ? String(hmail.todo.notes.project_id ?? '') : '';
    for (const e of events) {
      const provider = String((hmail?.notes[PROVIDER] as string | undefined) || e.provider || (providerOfDomain(e.recipient.split('@').pop() ?? '') ?? OTHER));
      const w = WINDOW_OF[e.type];
      if (w) this.outcome(provider, projectId, w, 1, now);
      if (e.cause === 'receiver' && e.response && (e.type === 'deferred' || e.type === 'bounced' || e.type === 'rejected'))
        this.answer(provider, e.enhancedCode, e.response, now);
    }
  }

  /** Recipients' outcomes for the windows: delivered (2xx), deferred, bounced (bounced and rejected), complained. */
  outcome(provider: string, projectId: string, what: WindowOutcome, n = 1, atMs = clock.now()): void {
    this.revision++;
    const k = `${this.label(provider)}\t${projectId}`;
    const minute = Math.floor(atMs / MINUTE_MS);
    const hour = Math.floor(atMs / HOUR_MS);
    for (const [buckets, at, keep] of [
      [this.minutes, minute, 60],
      [this.hours, hour, 24],
    ] as const) {
      let b = buckets.get(at);
      if (!b) {
        buckets.set(at, (b = { figures: new Map() }));
        // Bounded: buckets past the window go as a new one opens.
        for (const old of buckets.keys()) if (old <= at - keep) buckets.delete(old);
      }
      let o = b.figures.get(k);
      if (!o) b.figures.set(k, (o = noOutcomes()));
      o[what] += n;
    }
  }

  /** A remote answer (deferred, bounced, rejected) to mail for a provider: grouped by enhanced code over the last hour. */
  answer(provider: string, enhancedCode: string, text: string, atMs = clock.now()): void {
    this.revision++;
    const p = this.label(provider);
    let groups = this.answers.get(p);
    if (!groups) this.answers.set(p, (groups = new Map()));
    let a = groups.get(enhancedCode);
    if (!a) {
      if (groups.size >= ANSWER_GROUPS) {
        let oldest: Answers | undefined;
        for (const g of groups.values()) if (!oldest || g.lastAtMs < oldest.lastAtMs) oldest = g;
        groups.delete(oldest!.enhancedCode);
      }
      groups.set(enhancedCode, (a = { enhancedCode, sample: '', lastAtMs: 0, perMinute: new Map() }));
    }
    a.sample = text.slice(0, SAMPLE_CHARS);
    a.lastAtMs = atMs;
    const minute = Math.floor(atMs / MINUTE_MS);
    a.perMinute.set(minute, (a.perMinute.get(minute) ?? 0) + 1);
    if (a.perMinute.size > 60) for (const m of a.perMinute.keys()) if (m <= minute - 60) a.perMinute.delete(m);
  }

  /** A provider's answers of the last hour, most frequent first. */
  answersOf(provider: string, nowMs = clock.now()): AnswerFigures[] {
    const groups = this.answers.get(provider);
    if (!groups) return [];
    const since = Math.floor(nowMs / MINUTE_MS) - 59;
    const out: AnswerFigures[] = [];
    for (const a of groups.values()) {
      let count = 0;
      for (const [m, n] of a.perMinute) if (m >= since) count += n;
      if (count) out.push({ enhancedCode: a.enhancedCode, count, sample: a.sample, lastAtMs: a.lastAtMs });
      else if (a.lastAtMs < nowMs - HOUR_MS) groups.delete(a.enhancedCode);
    }
    return out.sort((a, b) => b.count - a.count || b.lastAtMs - a.lastAtMs);
  }

  /**
   * The windows, answers and warm-up starts as JSON (saved in the outbox settings now and then, so a
   * restarted gateway still shows how the last hour and day went); undefined when past `maxChars`.
   */
  save(maxChars = 2_000_000): string | undefined {
    const buckets = (m: Map<number, Bucket>) => [...m].map(([at, b]) => [at, [...b.figures]]);
    const json = JSON.stringify({
      minutes: buckets(this.minutes),
      hours: buckets(this.hours),
      answers: [...this.answers].map(([p, g]) => [p, [...g.values()].map((a) => ({ ...a, perMinute: [...a.perMinute] }))]),
      warmupStart: [...this.warmupStart],
    });
    return json.length <= maxChars ? json : undefined;
  }

  /** Takes back what save() wrote (at start, before anything is counted). A broken text is ignored. */
  restore(json: string | undefined): void {
    if (!json) return;
    try {
      const d = JSON.parse(json) as {
        minutes: Array<[number, Array<[string, Outcomes]>]>;
        hours: Array<[number, Array<[string, Outcomes]>]>;
        answers: Array<[string, Array<Omit<Answers, 'perMinute'> & { perMinute: Array<[number, number]> }>]>;
        warmupStart: Array<[string, number]>;
      };
      for (const [at, figures] of d.minutes) this.minutes.set(at, { figures: new Map(figures) });
      for (const [at, figures] of d.hours) this.hours.set(at, { figures: new Map(figures) });
      for (const [p, groups] of d.answers) this.answers.set(p, new Map(groups.map((a) => [a.enhancedCode, { ...a, perMinute: new Map(a.perMinute) }])));
      for (const [id, start] of d.warmupStart) this.warmupStart.set(id, start);
    } catch {
      // Figures of the past only: without them the windows start again.
    }
  }

  /** Every provider's and project's outcomes together, by the minute over the last hour and by the hour over the last day. */
  series(nowMs = clock.now()): DeliverySeries {
    const out = noSeries(nowMs);
    for (const [buckets, to, stepMs] of [
      [this.minutes, out.minute, MINUTE_MS],
      [this.hours, out.hour, HOUR_MS],
    ] as const) {
      const first = to.startMs / stepMs;
      for (const [at, b] of buckets) {
        const i = at - first;
        if (i < 0 || i >= to.delivered.length) continue;
        for (const o of b.figures.values()) {
          to.delivered[i]! += o.delivered;
          to.deferred[i]! += o.deferred;
          to.bounced[i]! += o.bounced;
          to.complained[i]! += o.complained;
        }
      }
    }
    return out;
  }

  /** The windows of every provider/project pair that had outcomes in the last day: `${provider}\t${project}` → windows. */
  windows(nowMs = clock.now()): Map<string, WindowFigures> {
    const out = new Map<string, WindowFigures>();
    const at = (k: string) => {
      let w = out.get(k);
      if (!w) out.set(k, (w = noWindows()));
      return w;
    };
    const add = (o: Outcomes, x: Outcomes) => {
      o.delivered += x.delivered;
      o.deferred += x.deferred;
      o.bounced += x.bounced;
      o.complained += x.complained;
    };
    const minute = Math.floor(nowMs / MINUTE_MS);
    for (const [m, b] of this.minutes) {
      if (m <= minute - 60 || m > minute) continue;
      for (const [k, o] of b.figures) {
        const w = at(k);
        add(w.lastHour, o);
        if (m > minute - 5) add(w.last5m, o);
      }
    }
    // The day is read by the hour: the current hour and the 23 before it.
    const hour = Math.floor(nowMs / HOUR_MS);
    for (const [h, b] of this.hours) {
      if (h <= hour - 24 || h > hour) continue;
      for (const [k, o] of b.figures) add(at(k).lastDay, o);
    }
    return out;
  }
}
