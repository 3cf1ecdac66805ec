// deploy/grafana-dashboard.json: valid JSON with a Prometheus data source variable that every panel and
// query uses, panels that do not overlap, and queries that name only metrics the registries declare
// (control's, its HTTP families, the gateways' scrape and the gateway's own; a histogram's _bucket,
// _sum and _count by its name). test/e2e/operations/metrics.test.ts checks the names on a live scrape too.
import fs from 'node:fs';
import { expect, it } from 'vitest';
import { Registry } from '../../core/metrics.js';
import { adminRefused, controlMetrics } from '../../control/metrics.js';
import { bodyBudgetMetrics, httpMetrics } from '../../control/http/metrics.js';
import { GatewayScrape } from '../../control/delivery/gateway-metrics.js';
import { GatewayMetrics } from '../../gateway/metrics.js';

const dashboard = JSON.parse(fs.readFileSync(new URL('../../deploy/grafana-dashboard.json', import.meta.url), 'utf8'));

/** Every family name the registries declare, with the series names a histogram adds. */
function declared(): Set<string> {
  const control = new Registry();
  controlMetrics(control, { loopLoad: () => 0, storeStats: () => ({ commits: 0, writes: 0 }) });
  httpMetrics(control);
  bodyBudgetMetrics(control, { inFlight: 0, active: 0, refused: 0, waited: 0 });
  adminRefused(control);
  const scrape = new GatewayScrape({ list: [], metrics: async () => '' }, {} as never);
  const gateway = new GatewayMetrics({ pacing: { providers: {} } } as never);
  const names = new Set<string>();
  for (const r of [control, scrape.registry, gateway.registry]) {
    const text = r.render();
    for (const n of r.names()) {
      names.add(n);
      if (text.includes(`# TYPE ${n} histogram`)) for (const s of ['_bucket', '_sum', '_count']) names.add(n + s);
    }
  }
  return names;
}

/** Grafana's reference to the data source variable (a literal `${datasource}`, not a template). */
const SOURCE = { type: 'prometheus', uid: ['$', '{datasource}'].join('') };

const panels = (dashboard.panels as any[]).filter((p) => p.type !== 'row');
const exprs = panels.flatMap((p) => (p.targets as any[]).map((t) => t.expr as string));

it('has a Prometheus data source variable that every panel and query uses', () => {
  const ds = dashboard.templating.list.find((v: any) => v.type === 'datasource');
  expect(ds).toMatchObject({ name: 'datasource', query: 'prometheus' });
  expect(panels.length).toBeGreaterThanOrEqual(10);
  for (const p of panels) {
    expect(p.datasource, p.title).toEqual(SOURCE);
    expect(p.targets.length, p.title).toBeGreaterThan(0);
    for (const t of p.targets) expect(t.datasource, p.title).toEqual(SOURCE);
  }
  for (const v of dashboard.templating.list.filter((x: any) => x.type === 'query')) expect(v.datasource).toEqual(SOURCE);
});

it('queries only metrics the registries declare, and covers the ones operators watch', () => {
  const names = declared();
  const used = new Set(exprs.flatMap((e) => e.match(/\bpostgate_[a-z0-9_]+/g) ?? []));
  for (const v of dashboard.templating.list) for (const n of JSON.stringify(v.query ?? '').match(/\bpostgate_[a-z0-9_]+/g) ?? []) used.add(n);
  for (const n of used) expect(names, n).toContain(n);
  for (const n of [
    'postgate_gateway_queue_messages',
    'postgate_gateway_attempts_total',
    'postgate_gateway_deferrals_total',
    'postgate_delivery_latency_seconds_bucket',
    'postgate_http_request_duration_seconds_bucket',
    'postgate_gateway_shaping_actions',
    'postgate_gateway_connections',
    'postgate_process_rss_bytes',
    'postgate_gateway_process_rss_bytes',
  ])
    expect(used, n).toContain(n);
});

it('lays panels out without overlaps', () => {
  const boxes = (dashboard.panels as any[]).map((p) => ({ title: p.title, ...p.gridPos }));
  for (const [i, a] of boxes.entries()) {
    expect(a.x + a.w, a.title).toBeLessThanOrEqual(24);
    for (const b of boxes.slice(i + 1)) {
      const overlap = a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
      expect(overlap, `${a.title} / ${b.title}`).toBe(false);
    }
  }
});
