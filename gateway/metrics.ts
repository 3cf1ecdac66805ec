// The gateway's own families (rt.metrics), served by the Metrics RPC and appended by control to its
// /metrics: attempts and outcomes per provider and class, deferrals by cause, the queue by state,
// connections, active shaping actions, delivery latency from accept to the remote 2xx, memory.
//
// The provider label takes the names of common/providers.ts, the config's pacing.providers and
// `other` (a pacing gate `other:<domain>` counts as `other`): never a recipient domain or address.
import { PROVIDERS, OTHER } from '../common/providers.js';
import type { Config } from '../core/config.js';
import { clock } from '../core/clock.js';
import { type Counter, type Histogram, processMemoryGauges, Registry } from '../core/metrics.js';
import type { NewDeliveryEvent } from './outbox/outbox.js';
import type { HMailItem } from './haraka.js';
import { MX_FAILURE, PROVIDER } from './outcome.js';
import { DEFER_CAUSES } from '../common/delivery-state.js';
import { TLS_REQUIRED, tlsFailureOf, tlsFromJson } from './tls/tls-info.js';

export const CLASSES = ['transactional', 'bulk'] as const;
export const OUTCOMES = ['delivered', 'deferred', 'bounced', 'rejected'] as const;
/** The deferral causes, as the live state names them. */
export const CAUSES = DEFER_CAUSES;
export const QUEUE_STATES = ['ready', 'in_flight', 'deferred'] as const;
export const SHAPING_ACTIONS = ['rate', 'connections', 'suspend'] as const;
/** How a delivered copy travelled (gateway/tls): under TLS whose certificate verified, under TLS that did not, in clear. */
export const TLS_STATES = ['verified', 'unverified', 'none'] as const;
/** What required the TLS an attempt could not have. */
export const TLS_POLICIES = ['domain', 'provider', 'mta-sts'] as const;
/** Seconds from control's accept to the remote 2xx: loopback in a fraction of a second, a warm-up hold into the next day. */
export const LATENCY_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 48 * 3600];

export type Cause = (typeof CAUSES)[number];

/** What the queue holds now, per provider (the state tracker's counts, gateway/state). */
export interface QueueCounts {
  provider: string;
  ready: number;
  inFlight: number;
  deferred: Partial<Record<Cause, number>>;
}

const OUTCOME_OF: Partial<Record<NewDeliveryEvent['type'], (typeof OUTCOMES)[number]>> = {
  sent: 'delivered',
  deferred: 'deferred',
  bounced: 'bounced',
  rejected: 'rejected',
};

/** The cause of a hold's deferral for the metrics: warm-up is reported as pacing in events, `volume` in the state and here. */
export function holdCause(eventCause: string | undefined, hold: string): Cause {
  if (hold === 'warmup') return 'volume';
  return (CAUSES as readonly string[]).includes(eventCause ?? '') ? (eventCause as Cause) : 'pacing';
}

export class GatewayMetrics {
  readonly registry = new Registry();
  readonly providers: readonly string[];
  private readonly known: Set<string>;
  private readonly attempts: Counter<'provider' | 'class' | 'outcome'>;
  private readonly deferrals: Counter<'provider' | 'cause'>;
  private readonly latency: Histogram<'provider'>;
  private readonly deliveredTls: Counter<'provider' | 'tls'>;
  private readonly tlsRefused: Counter<'provider' | 'policy'>;
  private readonly stsFetches: Counter<'result'>;
  /** Attempts under way: queue item → provider (busy connections). */
  private readonly busy = new Map<string, string>();
  /** The state tracker's counts (rt.queueState.byProvider(), pointed at by gateway/runtime.ts). */
  queueCounts: () => Iterable<QueueCounts> = () => [];
  /** Idle kept connections per pacing gate (gateway/hooks/connection-reuse.ts), when reuse is on. */
  idleConnections: () => Iterable<[gate: string, idle: number]> = () => [];
  /** Active shaping actions (rt.shaper.actions(), gateway/shaping), once it exists. */
  shapingActions: () => Iterable<{ provider?: string; action?: { kind: string } }> = () => [];

  constructor(config: Pick<Config, 'pacing'>) {
    this.providers = [...new Set([...PROVIDERS.map((p) => p.name), ...Object.keys(config.pacing.providers), OTHER])];
    this.known = new Set(this.providers);
    const provider = this.providers;
    const r = this.registry;
    this.attempts = r.counter(
      'postgate_gateway_attempts_total',
      'Recipients of SMTP attempts by receiving provider, class and outcome (delivered: remote 2xx; deferred: 4xx or no connection, tried again; bounced: refused for good; rejected: refused, tried again later or given up)',
      { provider, class: CLASSES, outcome: OUTCOMES },
    );
    this.deferrals = r.counter(
      'postgate_gateway_deferrals_total',
      "Deferrals by receiving provider and cause (receiver: remote 4xx; network: no route or connection; pacing: waiting for a connection or the rate; volume: warm-up norm reached; shaping: a shaping rule's hold; suspended: an operator's suspension)",
      { provider, cause: CAUSES },
    );
    r.gauge('postgate_gateway_queue_messages', 'Queue items (one message copy each) the gateway holds, by receiving provider and state', {
      labels: { provider, state: QUEUE_STATES },
      collect: (put) => {
        for (const q of this.queueCounts()) {
          const p = this.provider(q.provider);
          put({ provider: p, state: 'ready' }, q.ready);
          put({ provider: p, state: 'in_flight' }, q.inFlight);
          put(
            { provider: p, state: 'deferred' },
            Object.values(q.deferred).reduce((a, b) => a + (b ?? 0), 0),
          );
        }
      },
    });
    r.gauge(
      'postgate_gateway_queue_deferred_messages',
      'Deferred queue items by receiving provider and cause (the deferred state of postgate_gateway_queue_messages, split)',
      {
        labels: { provider, cause: CAUSES },
        collect: (put) => {
          for (const q of this.queueCounts()) {
            for (const cause of CAUSES) put({ provider: this.provider(q.provider), cause }, q.deferred[cause] ?? 0);
          }
        },
      },
    );
    r.gauge('postgate_gateway_connections', 'Outbound SMTP connections by receiving provider: busy (an attempt under way) or idle (kept for reuse)', {
      labels: { provider, state: ['busy', 'idle'] },
      collect: (put) => {
        for (const p of this.busy.values()) put({ provider: p, state: 'busy' }, 1);
        for (const [gate, n] of this.idleConnections()) put({ provider: this.provider(gate), state: 'idle' }, n);
      },
    });
    r.gauge(
      'postgate_gateway_shaping_actions',
      'Shaping actions in force by the receiving provider they apply to and kind (a lowered rate or connections, a suspension)',
      {
        labels: { provider, action: SHAPING_ACTIONS },
        collect: (put) => {
          for (const a of this.shapingActions()) {
            const action = SHAPING_ACTIONS.find((k) => k === a.action?.kind);
            if (action) put({ provider: this.provider(a.provider ?? OTHER), action }, 1);
          }
        },
      },
    );
    this.latency = r.histogram(
      'postgate_delivery_latency_seconds',
      "Seconds from control's accept of an email to the remote server's 2xx for a copy of it, by receiving provider",
      { buckets: LATENCY_BUCKETS, labels: { provider } },
    );
    this.deliveredTls = r.counter(
      'postgate_gateway_delivered_tls_total',
      "Recipients delivered (remote 2xx) by receiving provider and the connection's TLS: verified (the certificate verified for the MX name), unverified (TLS with a certificate that did not), none (in clear)",
      { provider, tls: TLS_STATES },
    );
    this.tlsRefused = r.counter(
      'postgate_gateway_tls_refused_total',
      'Recipients deferred because TLS was required and the MX could not give it (no STARTTLS, a certificate that does not verify, no MX the MTA-STS policy lists), by receiving provider and what required it',
      { provider, policy: TLS_POLICIES },
    );
    this.stsFetches = r.counter(
      'postgate_gateway_mta_sts_fetches_total',
      'MTA-STS policy fetches by result (failed: not fetched or not readable, so no policy)',
      {
        result: ['ok', 'failed'],
      },
    );
    processMemoryGauges(r, 'postgate_gateway_process', 'the gateway');
  }

  /**
   * Reads the runtime's parts at each scrape: kept connections (set up by the pacing hook), and the
   * shaping actions once gateway/shaping gives rt.shaper.
   */
  readFrom(rt: {
    connections?: { idleByGate(): Iterable<[string, number]> };
    shaper?: { actions(): Iterable<{ provider?: string; action?: { kind: string } }> };
  }): void {
    this.idleConnections = () => rt.connections?.idleByGate() ?? [];
    this.shapingActions = () => rt.shaper?.actions() ?? [];
  }

  /** A provider's label: a name we know, else `other` (gates of `other` are `other:<domain>`). */
  provider(name: string | undefined): string {
    return name && this.known.has(name) ? name : OTHER;
  }

  private providerOf(hmail: HMailItem): string {
    return this.provider(String(hmail.notes[PROVIDER] ?? ''));
  }

  /** The events an attempt's outcome wrote (delivered, deferred, bounce hooks): one count per recipient. */
  outcome(hmail: HMailItem, events: readonly NewDeliveryEvent[]): void {
    const provider = this.providerOf(hmail);
    const klass = hmail.todo.notes.bulk === true ? 'bulk' : 'transactional';
    for (const e of events) {
      const outcome = OUTCOME_OF[e.type];
      if (outcome) this.attempts.with({ provider, class: klass, outcome }).inc();
      if (e.type === 'deferred') this.deferral(provider, e.cause === 'network' ? 'network' : 'receiver');
      if (e.type === 'sent') {
        const t = tlsFromJson(e.tls ?? '');
        this.deliveredTls.with({ provider, tls: !t?.used ? 'none' : t.verified ? 'verified' : 'unverified' }).inc();
      }
      // Required TLS refused at the MX (tls-info), or an MTA-STS policy that lists none of the MX hosts (a route failure).
      const required = hmail.notes[TLS_REQUIRED] as (typeof TLS_POLICIES)[number] | undefined;
      if (e.type === 'deferred' && required && (tlsFailureOf(hmail) || hmail.notes[MX_FAILURE])) this.tlsRefused.with({ provider, policy: required }).inc();
    }
    if (events.some((e) => e.type === 'sent')) {
      const accepted = Number(hmail.todo.notes.accepted_ms) || 0;
      if (accepted > 0) this.latency.with({ provider }).observe(Math.max(0, clock.now() - accepted) / 1000);
    }
  }

  /** A copy held before its attempt (pacing, warm-up, shaping, suspension), counted once per recipient as its events are. */
  deferral(provider: string, cause: Cause, recipients = 1): void {
    this.deferrals.with({ provider: this.provider(provider), cause }).inc(recipients);
  }

  /** An MTA-STS policy fetch ended (gateway/tls/sts-policies.ts). */
  stsFetched(ok: boolean): void {
    this.stsFetches.with({ result: ok ? 'ok' : 'failed' }).inc();
  }

  attemptStarted(hmail: HMailItem): void {
    this.busy.set(hmail.todo.uuid, this.providerOf(hmail));
  }

  attemptEnded(hmail: HMailItem): void {
    this.busy.delete(hmail.todo.uuid);
  }

  render(): string {
    return this.registry.render();
  }
}
