// A line chart over uPlot (small and fast), resized with its container.
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { fmtDate, num } from './ui';

export interface Line {
  label: string;
  values: number[];
  color: string;
  /** Dashed (e.g. accepted, which the delivered line often lies on). */
  dash?: boolean;
}

const day = (t: number) => fmtDate(new Date(t * 1000), false).slice(0, 10);
/** Time axis ticks in the console's one date format: `HH:MM`, with the date under the first tick and each tick
 * that starts another day (uPlot draws a "\n" as a second line). */
const tickLabels = (_u: uPlot, splits: number[]): string[] =>
  splits.map((t, i) => {
    const hm = fmtDate(new Date(t * 1000), false).slice(11);
    return i === 0 || day(t) !== day(splits[i - 1] as number) ? `${hm}\n${day(t)}` : hm;
  });
const sumOf = (xs: ArrayLike<number | null | undefined>): number => {
  let n = 0;
  for (let i = 0; i < xs.length; i++) n += xs[i] ?? 0;
  return n;
};

/** Bucket start times (seconds) from the series' first bucket and step. */
export const bucketTimes = (startIso: string, stepS: number, n: number): number[] => {
  const t0 = Date.parse(startIso) / 1000;
  return Array.from({ length: n }, (_, i) => t0 + i * stepS);
};

export function Chart({ title, times, lines, height = 220 }: { title: string; times: number[]; lines: Line[]; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = lines.map((l) => `${l.label}:${l.color}:${l.dash ?? false}`).join('|');

  // biome-ignore lint/correctness/useExhaustiveDependencies: rebuilt only when the set of lines changes; data is set below
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: uPlot.Options = {
      width: Math.max(el.clientWidth, 200),
      height,
      // Off the chart the legend shows each line's total over the chart (uPlot's default is "--"); on it, the
      // bucket under the cursor.
      series: [
        { label: 'Time', value: (_u, v, _s, idx) => (idx === null || v === null ? 'totals' : fmtDate(new Date(v * 1000), false)) },
        ...lines.map(
          (l): uPlot.Series => ({
            label: l.label,
            stroke: l.color,
            width: 2,
            dash: l.dash ? [6, 4] : undefined,
            points: { show: false },
            value: (u, v, sidx, idx) => num(idx === null ? sumOf(u.data[sidx] ?? []) : v),
          }),
        ),
      ],
      axes: [
        { stroke: '#6b7280', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#e5e7eb' }, values: tickLabels, size: 56 },
        { stroke: '#6b7280', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#e5e7eb' }, size: 48 },
      ],
      scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      cursor: { drag: { x: false, y: false } },
      legend: { live: true },
    };
    const u = new uPlot(opts, [times, ...lines.map((l) => l.values)], el);
    plot.current = u;
    const ro = new ResizeObserver(() => u.setSize({ width: Math.max(el.clientWidth, 200), height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [shape, height]);

  useEffect(() => {
    plot.current?.setData([times, ...lines.map((l) => l.values)]);
  }, [times, lines]);

  return (
    <figure className="chart" aria-label={title}>
      <figcaption>{title}</figcaption>
      <div ref={box} className="chart-box" />
    </figure>
  );
}

export const COLORS = {
  accepted: '#4f46e5',
  delivered: '#16a34a',
  deferred: '#d97706',
  bounced: '#dc2626',
  complained: '#db2777',
  signed_in: '#16a34a',
  failed: '#dc2626',
};
