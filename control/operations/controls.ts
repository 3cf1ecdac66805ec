// Queue control as control sees it: the operator suspends and resumes delivery (to a provider, of a
// project, or both), sends deferred mail now, and cancels a project's mail. Suspensions and cancel
// orders are stored, then pushed to every gateway as one full replacement (SetControls) at each change
// and whenever a gateway's event stream connects (it may have restarted), as pacing pushes throttles.
// In a cluster a change is published on the invalidation bus: every other control pushes to its own
// gateways too (core/invalidation.ts), so a suspension ordered on one node holds on every node.
import { clock, DAY_MS } from '../../core/clock.js';
import { invalid, notFound } from '../../core/errors.js';
import { prefixedId } from '../../core/ids.js';
import type { Invalidator } from '../../core/invalidation.js';
import type { Logger } from '../../core/log.js';
import type { Gateway, GatewayClients } from '../delivery/gateways.js';
import { GatewayPush } from '../delivery/gateway-push.js';
import type { Project, Store, SuspensionRow } from '../store/index.js';

/** How long a cancel order is kept and pushed: longer than any mail stays in a gateway's queue. */
export const CANCEL_ORDERS_KEPT_MS = 14 * DAY_MS;
/** The bus channel: 'push' (the controls changed) or 'send-now <provider> <project id>'. */
const CHANNEL = 'queue-controls';
/** How long a change waits for the gateways to take it before it answers (one that is down gets it when it connects). */
const PUSH_WAIT_MS = 5000;
const RESET_PUSH_MS = 10_000;

export interface SuspensionView {
  id: string;
  provider: string | null;
  project: string | null;
  until: string | null;
  reason: string;
  created_at: string;
}

export interface ControlTarget {
  provider?: string;
  /** A project's slug. */
  project?: string;
}

export class QueueControls {
  private readonly pushes: GatewayPush;
  /** True while this node publishes: its own bus delivers the message at once, and it already acted. */
  private publishing = false;

  constructor(
    private readonly store: Store,
    private readonly gateways: GatewayClients,
    private readonly invalidator: Invalidator,
    private readonly log: Logger,
    /** Providers a suspension or send-now may name (the pacing service's list). */
    private readonly providers: () => string[],
  ) {
    this.pushes = new GatewayPush('queue controls', log);
    invalidator.subscribe(CHANNEL, (key) => {
      if (this.publishing) return;
      if (key === 'push') return void this.pushAll();
      const [, provider = '', projectId = ''] = key.split(' ');
      void this.wake(provider, projectId).catch((err) => this.log.warn({ err }, 'send-now from another node failed'));
    });
    // Messages may have been missed while the bus was away: push what the store holds now (resets come
    // every second while Redis is away; once per RESET_PUSH_MS is enough).
    let resetPushAt = 0;
    invalidator.onReset(() => {
      if (clock.now() - resetPushAt < RESET_PUSH_MS) return;
      resetPushAt = clock.now();
      void this.pushAll();
    });
  }

  private announce(key: string): void {
    this.publishing = true;
    try {
      this.invalidator.publish(CHANNEL, key);
    } finally {
      this.publishing = false;
    }
  }

  private async project(slug: string): Promise<Project> {
    const p = await this.store.projects.bySlug(slug);
    if (!p) throw notFound(`No project ${slug}`);
    return p;
  }

  private provider(name: string): string {
    if (!this.providers().includes(name)) throw notFound(`No provider ${name}; one of ${this.providers().join(', ')}`);
    return name;
  }

  private async view(s: SuspensionRow): Promise<SuspensionView> {
    const project = s.projectId ? ((await this.store.projects.byId(s.projectId))?.slug ?? s.projectId) : null;
    return {
      id: s.id,
      provider: s.provider || null,
      project,
      until: s.until === null ? null : new Date(s.until).toISOString(),
      reason: s.reason,
      created_at: new Date(s.createdAt).toISOString(),
    };
  }

  /** Suspensions in force now, oldest first. */
  async list(): Promise<SuspensionView[]> {
    return Promise.all((await this.store.operations.suspensions(clock.now())).map((s) => this.view(s)));
  }

  /** Holds delivery to a provider and/or of a project until `until` (absent: until resumed). */
  async suspend(t: ControlTarget & { until?: number; reason?: string }): Promise<SuspensionView> {
    if (!t.provider && !t.project) throw invalid('Name a provider, a project, or both');
    const now = clock.now();
    if (t.until !== undefined && !(t.until > now)) throw invalid('until must be in the future');
    const row: SuspensionRow = {
      id: prefixedId('sus'),
      provider: t.provider ? this.provider(t.provider) : '',
      projectId: t.project ? (await this.project(t.project)).id : '',
      until: t.until ?? null,
      reason: t.reason ?? '',
      createdAt: now,
    };
    await this.store.operations.suspend(row);
    await this.changed();
    return this.view(row);
  }

  /** Ends a suspension; 404 when none has that id. */
  async resume(id: string): Promise<SuspensionView> {
    const row = await this.store.operations.resume(id);
    if (!row) throw notFound(`No suspension ${id}`);
    await this.changed();
    return this.view(row);
  }

  /** Deferred mail of the provider and/or project (neither: all of it) is tried at once, within throttles and norms. */
  async sendNow(t: ControlTarget): Promise<{ woken: number }> {
    const provider = t.provider ? this.provider(t.provider) : '';
    const projectId = t.project ? (await this.project(t.project)).id : '';
    const woken = await this.wake(provider, projectId);
    this.announce(`send-now ${provider} ${projectId}`);
    return { woken };
  }

  /**
   * Cancels the project's mail accepted until now: the order is stored and reaches the gateways first
   * (they drop what they hold of it, and whatever of it reaches them later), then every email of it still
   * open becomes 'canceled' in the store. `dropped`: queue items the gateways that answered dropped.
   */
  async cancel(slug: string): Promise<{ canceled: number; dropped: number }> {
    const p = await this.project(slug);
    const now = clock.now();
    await this.store.operations.orderCancel({ projectId: p.id, acceptedBefore: now, orderedAt: now });
    const dropped = await this.changed();
    const canceled = await this.store.operations.cancelProject(p.id, now, clock.now());
    return { canceled, dropped };
  }

  /** The controls changed: every gateway of this node gets them (waiting a little for them), every other node is told. */
  private async changed(): Promise<number> {
    this.announce('push');
    return this.pushAll(PUSH_WAIT_MS);
  }

  /** Pushes to every gateway; with `waitMs`, answers after at most that long with the items dropped by those that took it. */
  async pushAll(waitMs?: number): Promise<number> {
    const pushes = this.gateways.list.map((gw) => this.push(gw));
    if (waitMs === undefined) return 0;
    const timeout = new Promise<undefined>((r) => setTimeout(() => r(undefined), waitMs).unref());
    const dropped = await Promise.all(pushes.map((p) => Promise.race([p, timeout])));
    return dropped.reduce<number>((n, d) => n + (d ?? 0), 0);
  }

  /** Sends the controls in force to one gateway, retrying until it takes them (or a newer push supersedes this one). */
  async push(gw: Gateway): Promise<number | undefined> {
    return this.pushes.push(gw, async () => {
      const now = clock.now();
      const [suspensions, orders] = await Promise.all([
        this.store.operations.suspensions(now),
        this.store.operations.cancelOrders(now - CANCEL_ORDERS_KEPT_MS),
      ]);
      return this.gateways.setControls(
        gw,
        suspensions.map((s) => ({ id: s.id, provider: s.provider, projectId: s.projectId, untilMs: BigInt(s.until ?? 0), reason: s.reason })),
        orders.map((o) => ({ projectId: o.projectId, acceptedBeforeMs: BigInt(o.acceptedBefore), orderedMs: BigInt(o.orderedAt) })),
      );
    });
  }

  /** Asks this node's gateways to wake the deferred mail; the sum of what those that answered woke. */
  private async wake(provider: string, projectId: string): Promise<number> {
    const woken = await Promise.all(
      this.gateways.list.map((gw) =>
        this.gateways.sendNow(gw, provider, projectId).catch((err: unknown) => {
          this.log.warn({ gateway: gw.name, err: (err as Error).message }, 'send-now: gateway did not answer');
          return 0;
        }),
      ),
    );
    return woken.reduce((a, b) => a + b, 0);
  }
}
