// Control's own families on its registry (core/metrics.ts), declared in one place: the composition
// root (main.ts) hands in what they read. The HTTP families are in control/http/metrics.ts, the
// gateways' are appended at each scrape (control/delivery/gateway-metrics.ts).
import { type Counter, processMemoryGauges, type Registry } from '../core/metrics.js';

export interface ControlMetrics {
  dispatched: Counter;
  deliveryEvents: Counter;
  codeSendsCapped: Counter<'project'>;
}

export interface ControlSources {
  /** How busy the event loop is (0-1), core/event-loop-load.ts. */
  loopLoad: () => number;
  /** The store's commits and writes since start (Store.stats). */
  storeStats: () => { commits: number; writes: number };
  /** Emails held before dispatch, per project (Store.pacing.heldByProject): read once per scrape. */
  heldByProject?: () => Promise<Array<{ held: number }>>;
  /** Open and click tracking's hits written to the store and dropped while it could not keep up (control/tracking/recorder.ts). */
  trackingHits?: () => { recorded: number; dropped: number };
}

export function controlMetrics(registry: Registry, sources: ControlSources): ControlMetrics {
  registry.gauge('postgate_event_loop_utilization', "Share of the last quarter second or more that control's event loop was busy (0-1)", {
    read: sources.loopLoad,
  });
  registry
    .counter(
      'postgate_store_commits_total',
      'Commits of the store since start: SQLite group commits (each holds several writes) or PostgreSQL transactions, by the backend in use',
    )
    .collectFrom(() => sources.storeStats().commits);
  registry
    .counter(
      'postgate_store_writes_total',
      'Writes the store committed since start (requests, events, status changes); a SQLite group commit or a PostgreSQL transaction may hold several',
    )
    .collectFrom(() => sources.storeStats().writes);
  const { trackingHits } = sources;
  if (trackingHits) {
    registry
      .counter('postgate_tracking_hits_recorded_total', 'Opens and clicks (tracked pixel and link fetches) written to the store since start')
      .collectFrom(() => trackingHits().recorded);
    registry
      .counter('postgate_tracking_hits_dropped_total', 'Opens and clicks dropped because the store could not be written for too long (100,000 waiting)')
      .collectFrom(() => trackingHits().dropped);
  }
  processMemoryGauges(registry, 'postgate_process', 'control');
  const held = registry.gauge(
    'postgate_held_emails',
    'Emails control holds before dispatch: bulk volume above what the warm-up announced, until announced or approved',
  );
  const { heldByProject } = sources;
  if (heldByProject) registry.beforeScrape(async () => held.set((await heldByProject()).reduce((n, p) => n + p.held, 0)));
  return {
    dispatched: registry.counter('postgate_emails_dispatched_total', 'Emails handed to a gateway (every copy queued there)'),
    deliveryEvents: registry.counter('postgate_delivery_events_total', 'Delivery events from the gateways applied to the store'),
    // Labelled by project: projects are few and created by the operator (a slug, never an address).
    codeSendsCapped: registry.counter(
      'postgate_auth_code_sends_capped_total',
      "Sign-in code requests refused because the project's hourly cap (auth.codeSendsPerProjectHour) was reached, per project slug",
      { project: /^[\w.-]{1,64}$/ },
    ),
  };
}

const admin = new WeakMap<Registry, Counter<'reason'>>();

/** The admin guard's refusals (control/admin/guard.ts), declared once per registry. */
export function adminRefused(registry: Registry): Counter<'reason'> {
  let c = admin.get(registry);
  if (!c) {
    c = registry.counter('postgate_admin_refused_total', 'Admin API requests refused by the token guard: wrong or missing token, or throttled', {
      reason: ['token', 'throttled'],
    });
    admin.set(registry, c);
  }
  return c;
}
