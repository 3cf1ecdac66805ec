// A line chart over uPlot (small and fast), resized with its container.
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Line {
  label: string;
  values: number[];
  color: string;
}

/** Bucket start times (seconds) from the series' first bucket and step. */
export const bucketTimes = (startIso: string, stepS: number, n: number): number[] => {
  const t0 = Date.parse(startIso) / 1000;
  return Array.from({ length: n }, (_, i) => t0 + i * stepS);
};

export function Chart({ title, times, lines, height = 220 }: { title: string; times: number[]; lines: Line[]; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = lines.map((l) => `${l.label}:${l.color}`).join('|');

  // biome-ignore lint/correctness/useExhaustiveDependencies: rebuilt only when the set of lines changes; data is set below
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: uPlot.Options = {
      width: Math.max(el.clientWidth, 200),
      height,
      series: [{}, ...lines.map((l) => ({ label: l.label, stroke: l.color, width: 2, points: { show: false } }))],
      axes: [
        { stroke: '#6b7280', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#e5e7eb' } },
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
