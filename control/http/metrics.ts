// The HTTP families of control's registry, declared once for both listeners and the fast lane.
import type { Counter, Histogram, Registry } from '../../core/metrics.js';
import { statusOf } from '../../core/errors.js';

export const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;
export const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'other'] as const;
/** A route pattern as Fastify declares it (`/v1/emails/:id`), never a raw path; `unmatched` for 404s. */
export const ROUTE = /^(\/[^\s"?#]*|unmatched)$/;
/** Seconds; from a cached session check (well under a millisecond) to a large attachment upload. */
export const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface HttpMetrics {
  responses: Counter<'status'>;
  errors: Counter<'code'>;
  duration: Histogram<'route' | 'method' | 'status_class'>;
  fromMemory: Counter;
}

const declared = new WeakMap<Registry, HttpMetrics>();

export function httpMetrics(registry: Registry): HttpMetrics {
  let m = declared.get(registry);
  if (m) return m;
  m = {
    responses: registry.counter('postgate_http_responses_total', 'HTTP answers of both listeners by status code (the fast lane included)', {
      status: /^[1-5][0-9][0-9]$/,
    }),
    errors: registry.counter('postgate_http_errors_total', 'HTTP answers in the error shape ({error, code}) by code', { code: Object.keys(statusOf) }),
    duration: registry.histogram(
      'postgate_http_request_duration_seconds',
      'Time from the request routed to its answer sent, by route pattern, method and status class (unmatched: no route)',
      { buckets: DURATION_BUCKETS, labels: { route: ROUTE, method: METHODS, status_class: STATUS_CLASSES } },
    ),
    fromMemory: registry.counter(
      'postgate_fast_lane_answers_total',
      'Answers given from memory before Fastify (GET /api/v1/auth/session with cached key, session and user)',
    ),
  };
  // The answers every API gives, at 0 from the start.
  for (const s of [200, 201, 202, 204, 400, 401, 403, 404, 409, 413, 422, 429, 500, 503]) m.responses.with({ status: String(s) });
  declared.set(registry, m);
  return m;
}

/** What the body budget (control/http/body-budget.ts) holds and has counted, read at each scrape. */
export interface BudgetFigures {
  readonly inFlight: number;
  readonly active: number;
  readonly refused: number;
  readonly waited: number;
}

/** The public listener's body budget: declared by the listener that has one. */
export function bodyBudgetMetrics(registry: Registry, budget: BudgetFigures): void {
  registry.gauge('postgate_http_body_bytes_in_flight', 'Request body bytes reserved by requests under way (http.inFlightBodyBytes caps it)', {
    read: () => budget.inFlight,
  });
  registry.gauge('postgate_http_body_bytes_active', 'Request body bytes being read or worked on (http.activeBodyBytes; the next requests wait their turn)', {
    read: () => budget.active,
  });
  // Counts since start that the budget keeps: counters read at scrape.
  registry
    .counter('postgate_http_body_budget_refused_total', 'Requests answered 503 because the in-flight body budget was full')
    .collectFrom(() => budget.refused);
  registry
    .counter('postgate_http_body_waits_total', 'Requests that waited for their turn to have their body read (http.activeBodyBytes)')
    .collectFrom(() => budget.waited);
}

export const statusClass = (status: number): (typeof STATUS_CLASSES)[number] => STATUS_CLASSES[Math.min(4, Math.max(0, Math.floor(status / 100) - 1))]!;

export const methodLabel = (method: string | undefined): (typeof METHODS)[number] =>
  (METHODS as readonly string[]).includes(method ?? '') ? (method as (typeof METHODS)[number]) : 'other';
