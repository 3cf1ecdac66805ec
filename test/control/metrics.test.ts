// control/metrics.ts: Prometheus text exposition of counters and gauges, each metric's HELP and
// TYPE once, however many label sets it has.
import { expect, it } from 'vitest';
import { Metrics } from '../../control/metrics.js';

it('counters and gauges in Prometheus text, sorted, with HELP and TYPE once per metric', () => {
  const m = new Metrics();
  m.describe('postgate_http_responses_total', 'Answers by status');
  m.inc('postgate_http_responses_total{status="200"}');
  m.inc('postgate_http_responses_total{status="200"}', 2);
  m.inc('postgate_http_responses_total{status="429"}');
  let depth = 4;
  m.gauge('postgate_queue_depth', () => depth, 'Emails waiting');
  m.gauge('postgate_no_help', () => 1);
  expect(m.render()).toBe(
    [
      '# HELP postgate_http_responses_total Answers by status',
      '# TYPE postgate_http_responses_total counter',
      'postgate_http_responses_total{status="200"} 3',
      'postgate_http_responses_total{status="429"} 1',
      '# TYPE postgate_no_help gauge',
      'postgate_no_help 1',
      '# HELP postgate_queue_depth Emails waiting',
      '# TYPE postgate_queue_depth gauge',
      'postgate_queue_depth 4',
      '',
    ].join('\n'),
  );
  // A gauge is read when rendered.
  depth = 9;
  expect(m.render()).toContain('postgate_queue_depth 9');
});

it('nothing yet: an empty exposition', () => {
  expect(new Metrics().render()).toBe('\n');
});
