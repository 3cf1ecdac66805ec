// /metrics read back with a Prometheus text-format parser from npm (prom2javascript: labelled
// histograms kept apart, +Inf checked against _count), and the checks every exposition of ours
// must pass: HELP and TYPE on every family, counters ending in _total, histograms with ascending
// cumulative buckets.
import { getMetricsFromIterator, type PromHistogramData, type PromMetrics } from 'prom2javascript';

export type { PromMetrics };

export const parseExposition = (text: string): Promise<PromMetrics> => getMetricsFromIterator(text.split('\n')[Symbol.iterator]());

/** What is wrong with the exposition's families (empty when nothing is). */
export function expositionProblems(metrics: PromMetrics): string[] {
  const problems: string[] = [];
  for (const [name, m] of Object.entries(metrics)) {
    if (!m.help?.trim()) problems.push(`${name}: no HELP`);
    if (!['counter', 'gauge', 'histogram'].includes(m.type)) problems.push(`${name}: TYPE ${m.type}`);
    if (m.type === 'counter' && !name.endsWith('_total')) problems.push(`${name}: a counter not ending in _total`);
    if (m.type !== 'counter' && name.endsWith('_total')) problems.push(`${name}: a ${m.type} ending in _total`);
    if (m.type === 'histogram') {
      for (const h of m.data as PromHistogramData[]) {
        const bounds = Object.keys(h.buckets).map((le) => (le === '+Inf' ? Infinity : Number(le)));
        const sorted = [...bounds].sort((a, b) => a - b);
        const values = sorted.map((b) => h.buckets[b === Infinity ? '+Inf' : Object.keys(h.buckets).find((le) => Number(le) === b)!]!);
        if (sorted[sorted.length - 1] !== Infinity) problems.push(`${name}: no +Inf bucket`);
        if (values.some((v, i) => i > 0 && v < values[i - 1]!)) problems.push(`${name}${JSON.stringify(h.labels)}: buckets not cumulative`);
        if (h.buckets['+Inf'] !== h.count) problems.push(`${name}${JSON.stringify(h.labels)}: +Inf ${h.buckets['+Inf']} is not the count ${h.count}`);
        if (h.sum === undefined) problems.push(`${name}${JSON.stringify(h.labels)}: no _sum`);
      }
    }
  }
  return problems;
}
