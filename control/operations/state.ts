// The live delivery state as the operator reads it (GET /admin/v1/queue/status, `postgate queue
// status`): each gateway's counts (gateway/state, kept as its queue changes) summed over this
// control's gateways (DeliveryState) and, in a cluster, the other nodes' gateways (the snapshots
// they publish to Redis every 2 s), with project ids shown as slugs and the emails control itself
// holds for a volume spike. The cost is gateways × providers × projects, never a queue's size.
import { clock } from '../../core/clock.js';
import { notFound } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import { readNodeValues, type RedisLink } from '../../core/redis.js';
import {
  type DeliverySnapshot,
  filterSnapshot,
  type Outcomes,
  type ProviderFigures,
  type QueueFigures,
  STATE_KEY_PREFIX,
  sumSnapshots,
  type WindowFigures,
} from '../../common/delivery-state.js';
import type { GatewayClients } from '../delivery/gateways.js';
import type { Store } from '../store/index.js';

/** A gateway that does not answer within this is reported unreachable, not waited for. */
const GATEWAY_TIMEOUT_MS = 2_000;

export interface StateQuery {
  provider?: string;
  /** A project's slug. */
  project?: string;
}

const queueOut = (q: QueueFigures) => ({
  ready: q.ready,
  in_flight: q.inFlight,
  deferred: { ...q.deferred },
});
const outcomesOut = (o: Outcomes) => ({ delivered: o.delivered, deferred: o.deferred, bounced: o.bounced, complained: o.complained });
const windowsOut = (w: WindowFigures) => ({ last_5m: outcomesOut(w.last5m), last_hour: outcomesOut(w.lastHour), last_day: outcomesOut(w.lastDay) });
const iso = (ms: number) => (ms > 0 ? new Date(ms).toISOString() : null);

export type QueueStatus = Awaited<ReturnType<DeliveryStateService['status']>>;

/** The gateways' published snapshots (gateway/state/publish.ts), every node's. */
export const readDeliveryStates = (redis: RedisLink): Promise<DeliverySnapshot[]> => readNodeValues<DeliverySnapshot>(redis, STATE_KEY_PREFIX);

export class DeliveryStateService {
  constructor(
    private readonly store: Store,
    private readonly gateways: GatewayClients,
    private readonly log: Logger,
    /** Providers the state may name (the pacing service's list, `other` included). */
    private readonly providers: () => string[],
    private readonly redis?: RedisLink,
  ) {}

  /**
   * Every node's snapshots: this control's gateways asked, the other nodes' read from Redis (in full).
   * `summary`: the gateways asked answer without each provider's projects (DeliveryStateRequest.summary).
   */
  async snapshots(provider = '', projectId = '', summary = false): Promise<{ snapshots: DeliverySnapshot[]; unreachable: string[] }> {
    const unreachable: string[] = [];
    const asked = await Promise.all(
      this.gateways.list.map((gw) =>
        this.gateways.deliveryState(gw, provider, projectId, GATEWAY_TIMEOUT_MS, summary).then(
          (s) => ({ ...s, node: s.node || gw.name }),
          (err: unknown) => {
            this.log.warn({ err, gateway: gw.name }, 'delivery state: gateway did not answer');
            unreachable.push(gw.name);
            return undefined;
          },
        ),
      ),
    );
    const snapshots = asked.filter((s): s is DeliverySnapshot => !!s);
    if (this.redis?.up) {
      const seen = new Set(snapshots.map((s) => s.node));
      try {
        for (const s of await readDeliveryStates(this.redis)) if (!seen.has(s.node)) snapshots.push(s);
      } catch (err) {
        this.redis.failed(err);
        this.log.warn({ err }, "delivery state: could not read the other nodes' state from Redis");
      }
    }
    return { snapshots, unreachable };
  }

  async status(q: StateQuery = {}) {
    if (q.provider && !this.providers().includes(q.provider)) throw notFound(`No provider ${q.provider}; one of ${this.providers().join(', ')}`);
    let projectId = '';
    if (q.project) {
      const p = await this.store.projects.bySlug(q.project);
      if (!p) throw notFound(`No project ${q.project}`);
      projectId = p.id;
    }
    const [{ snapshots, unreachable }, held] = await Promise.all([this.snapshots(q.provider ?? '', projectId), this.store.pacing.heldByProject()]);
    const providers = sumSnapshots(snapshots.map((s) => filterSnapshot(s, q.provider, projectId || undefined)));
    // Ids to slugs, once each.
    const ids = new Set<string>(held.map((h) => h.projectId));
    for (const p of providers) {
      for (const f of p.projects) ids.add(f.projectId);
      for (const a of p.actions) if (a.projectId) ids.add(a.projectId);
    }
    ids.delete('');
    const slugs = new Map<string, string>();
    await Promise.all([...ids].map(async (id) => slugs.set(id, (await this.store.projects.byId(id))?.slug ?? id)));
    const slug = (id: string) => (id ? (slugs.get(id) ?? id) : null);
    const heldOut = held.filter((h) => !projectId || h.projectId === projectId).map((h) => ({ project: slug(h.projectId), emails: h.held }));
    return {
      at: new Date(clock.now()).toISOString(),
      nodes: snapshots.map((s) => s.node).sort(),
      unreachable,
      held: { emails: heldOut.reduce((n, h) => n + h.emails, 0), projects: heldOut },
      providers: providers.map((p: ProviderFigures) => ({
        provider: p.provider,
        queue: queueOut(p.queue),
        connections: { open: p.connectionsOpen, limit: p.connectionsLimit || null },
        rate: { per_minute: p.ratePerMinute, configured: p.configuredRate || null, effective: p.effectiveRate || null },
        warmup: p.projects
          .filter((f) => f.projectId && (f.warmupUsed || f.warmupNorm))
          .map((f) => ({ project: slug(f.projectId), used: f.warmupUsed, norm: f.warmupNorm || null })),
        answers: p.answers.map((a) => ({ enhanced_code: a.enhancedCode, count: a.count, sample: a.sample, last_at: iso(a.lastAtMs) })),
        windows: windowsOut(p.windows),
        actions: p.actions.map((a) => ({
          rule: a.rule,
          action: a.action,
          value: a.value,
          project: slug(a.projectId),
          since: iso(a.sinceMs),
          until: iso(a.untilMs),
          trigger: a.trigger,
        })),
        projects: p.projects.map((f) => ({ project: slug(f.projectId), queue: queueOut(f.queue), windows: windowsOut(f.windows) })),
      })),
    };
  }
}
