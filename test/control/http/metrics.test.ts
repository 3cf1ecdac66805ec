// control/http/metrics.ts: the HTTP families, declared once per registry however many listeners and
// fast lanes use it; status classes and methods as bounded labels; route patterns only.
import { expect, it } from 'vitest';
import { Registry } from '../../../core/metrics.js';
import { httpMetrics, methodLabel, ROUTE, statusClass } from '../../../control/http/metrics.js';

it('declares the families once per registry, with the common answers at 0', () => {
  const r = new Registry();
  expect(httpMetrics(r)).toBe(httpMetrics(r));
  const text = r.render();
  expect(text.match(/# TYPE postgate_http_responses_total counter/g)).toHaveLength(1);
  expect(text).toContain('postgate_http_responses_total{status="429"} 0\n');
  expect(text).toContain('postgate_http_errors_total{code="STORE_UNAVAILABLE"} 0\n');
  expect(text).toContain('postgate_fast_lane_answers_total 0\n');
});

it('labels: status classes, a closed set of methods, route patterns or unmatched', () => {
  expect([100, 204, 302, 404, 429, 503].map(statusClass)).toEqual(['1xx', '2xx', '3xx', '4xx', '4xx', '5xx']);
  expect(['GET', 'DELETE', 'PROPFIND', undefined].map(methodLabel)).toEqual(['GET', 'DELETE', 'other', 'other']);
  for (const ok of ['/v1/emails/:id', 'unmatched', '/openapi.json']) expect(ROUTE.test(ok), ok).toBe(true);
  for (const bad of ['/v1/emails?x=1', 'v1', '/a b']) expect(ROUTE.test(bad), bad).toBe(false);
  const m = httpMetrics(new Registry());
  expect(() => m.duration.with({ route: '/v1/emails?to=a@b.test', method: 'GET', status_class: '2xx' })).toThrow(/not an allowed value/);
});
