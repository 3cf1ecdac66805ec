// `npm run bench:chart`: draws the last run of each benchmark found in bench/results/ as one SVG
// (bench/results/chart.svg, or the path given with --out), for the README's performance section.
// Hand-written SVG, no dependency: one panel of horizontal bars per figure, each titled with the
// run's date, commit and machine, since figures from a busy machine are not figures.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const resultsDir = path.join(root, 'bench/results');
const outArg = process.argv.indexOf('--out');
const out = outArg > 0 && process.argv[outArg + 1] ? path.resolve(process.argv[outArg + 1]!) : path.join(resultsDir, 'chart.svg');

type Json = Record<string, any>;

/** The newest result file of each bench (by the timestamp in its name). */
function lastRuns(): Map<string, Json> {
  const runs = new Map<string, { file: string; data: Json }>();
  if (!fs.existsSync(resultsDir)) return new Map();
  for (const f of fs.readdirSync(resultsDir).sort()) {
    const m = /^([a-z-]+?)-\d{4}-\d\d-\d\dT[\d-]+Z\.json$/.exec(f);
    if (!m) continue;
    try {
      runs.set(m[1]!, { file: f, data: JSON.parse(fs.readFileSync(path.join(resultsDir, f), 'utf8')) as Json });
    } catch {
      /* a run that did not finish writing */
    }
  }
  return new Map([...runs].map(([k, v]) => [k, { ...v.data, file: v.file }]));
}

interface Bar {
  label: string;
  value: number;
  text: string;
  /** Highlight (postgate's own bars). */
  ours?: boolean;
}

interface Panel {
  title: string;
  bars: Bar[];
  /** A vertical line: a target or a reference. */
  line?: { value: number; label: string };
}

const W = 820;
const LABEL_W = 250;
const BAR_W = 440;
const ROW_H = 22;
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const r = (n: number, d = 1) => String(Math.round(n * 10 ** d) / 10 ** d);

function panelSvg(p: Panel, y0: number): { svg: string; height: number } {
  const max = Math.max(...p.bars.map((b) => b.value), p.line?.value ?? 0) * 1.08 || 1;
  const x = (v: number) => LABEL_W + (v / max) * BAR_W;
  const parts: string[] = [`<text x="10" y="${y0 + 18}" class="t">${esc(p.title)}</text>`];
  p.bars.forEach((b, i) => {
    const y = y0 + 30 + i * ROW_H;
    parts.push(
      `<text x="${LABEL_W - 8}" y="${y + 14}" class="l" text-anchor="end">${esc(b.label)}</text>`,
      `<rect x="${LABEL_W}" y="${y + 3}" width="${Math.max(1, x(b.value) - LABEL_W).toFixed(1)}" height="${ROW_H - 6}" class="${b.ours ? 'o' : 'b'}"/>`,
      `<text x="${(x(b.value) + 6).toFixed(1)}" y="${y + 14}" class="v">${esc(b.text)}</text>`,
    );
  });
  const height = 30 + p.bars.length * ROW_H + 14;
  if (p.line) {
    const lx = x(p.line.value).toFixed(1);
    parts.push(
      `<line x1="${lx}" y1="${y0 + 26}" x2="${lx}" y2="${y0 + height - 10}" class="ref"/>`,
      `<text x="${lx}" y="${y0 + height - 1}" class="rl" text-anchor="middle">${esc(p.line.label)}</text>`,
    );
  }
  return { svg: parts.join('\n'), height: height + 8 };
}

const subtitle = (d: Json) =>
  `${String(d.date ?? '')
    .slice(0, 16)
    .replace('T', ' ')} · ${d.commit || 'no commit'} · ${d.cpus ?? ''} · load ${(d.load ?? []).join('→')}`;

function panels(runs: Map<string, Json>): Array<{ heading: string; note: string; panels: Panel[] }> {
  const groups: Array<{ heading: string; note: string; panels: Panel[] }> = [];
  const d = runs.get('deliverability');
  if (d) {
    const cs = d.contenders as Json[];
    const peer = cs.find((c) => String(c.name).startsWith('Postfix'));
    const ours = (c: Json) => String(c.name).startsWith('postgate');
    groups.push({
      heading: `Relaying to a loopback MX (${d.messages} messages × ${d.rounds} rounds, median; receiver ${d.receiver})`,
      note: subtitle(d),
      panels: [
        {
          title: 'delivered msgs/s (higher is better)',
          bars: cs.map((c) => ({ label: c.name, value: c.perSecond, text: r(c.perSecond, 0), ours: ours(c) })),
          ...(peer ? { line: { value: peer.perSecond * 1.5, label: 'target: 1.5× Postfix + OpenDKIM' } } : {}),
        },
        {
          title: 'CPU ms per delivered message, every process of the contender (lower is better)',
          bars: cs.map((c) => ({ label: c.name, value: c.cpuMsPerMessage, text: r(c.cpuMsPerMessage, 2), ours: ours(c) })),
          ...(peer ? { line: { value: peer.cpuMsPerMessage, label: 'target: ≤ Postfix + OpenDKIM' } } : {}),
        },
        {
          title: 'memory at load, MB PSS of every process (lower is better)',
          bars: cs.map((c) => ({ label: c.name, value: c.pssMb, text: r(c.pssMb, 0), ours: ours(c) })),
          line: { value: 200, label: 'target: 200 MB' },
        },
      ],
    });
  }
  const s = runs.get('session');
  if (s) {
    const rows = s.rows as Json[];
    const ours = (x: Json) => !String(x.name).startsWith('hello');
    groups.push({
      heading: `HTTP: the session check next to a hello-world (${s.connections} connections, ${s.generator})`,
      note: subtitle(s),
      panels: [
        { title: 'requests/s (higher is better)', bars: rows.map((x) => ({ label: x.name, value: x.rps, text: r(x.rps, 0), ours: ours(x) })) },
        {
          title: 'server CPU µs per request (lower is better)',
          bars: rows.map((x) => ({ label: x.name, value: x.cpuUs, text: r(x.cpuUs, 0), ours: ours(x) })),
        },
      ],
    });
  }
  const n = runs.get('send');
  if (n) {
    const rows = n.rows as Json[];
    const ours = (x: Json) => !String(x.name).startsWith('hello');
    groups.push({
      heading: `Sending: accepted emails/s (HTTP load: ${n.generator}; ${n.seconds} s each)`,
      note: subtitle(n),
      panels: [
        {
          title: 'per second (hello-world: requests; the rest: emails)',
          bars: rows.map((x) => ({ label: x.name, value: x.perSecond, text: r(x.perSecond, 0), ours: ours(x) })),
        },
        {
          title: 'CPU µs per request of the answering process (postgate: control; SMTP and batch: per email)',
          bars: rows
            .filter((x) => x.cpuUs !== undefined && x.cpuUs !== null)
            .map((x) => ({ label: x.name, value: x.cpuUs, text: r(x.cpuUs, 0), ours: ours(x) })),
        },
      ],
    });
  }
  const pr = runs.get('post-route');
  if (pr) {
    const rows = pr.rows as Json[];
    const stored = (x: Json) => String(x.name).includes('store');
    groups.push({
      heading: `HTTP: a POST through bare Fastify, bare node:http, and Fastify with postgate's store (${pr.connections} connections, ${pr.generator})`,
      note: subtitle(pr),
      panels: [
        { title: 'requests/s (higher is better)', bars: rows.map((x) => ({ label: x.name, value: x.rps, text: r(x.rps, 0), ours: stored(x) })) },
        {
          title: 'server CPU µs per request (lower is better)',
          bars: rows.map((x) => ({ label: x.name, value: x.cpuUs, text: r(x.cpuUs, 0), ours: stored(x) })),
        },
      ],
    });
  }
  const c = runs.get('scale');
  if (c) {
    const rows = c.rows as Json[];
    groups.push({
      heading: `Storage back ends (${c.emails} emails each)`,
      note: subtitle(c),
      panels: [
        { title: 'delivered/s', bars: rows.map((x) => ({ label: x.name, value: x.deliveredPerSec, text: r(x.deliveredPerSec, 0), ours: true })) },
        {
          title: 'CPU ms per message, database and Redis included',
          bars: rows.map((x) => ({ label: x.name, value: x.cpuMsPerMessage, text: r(x.cpuMsPerMessage, 2), ours: true })),
        },
      ],
    });
  }
  return groups;
}

function main(): void {
  const runs = lastRuns();
  const groups = panels(runs);
  if (!groups.length) {
    console.error('no results in bench/results/: run a benchmark first (npm run bench:deliverability, bench:session, bench:send)');
    process.exit(1);
  }
  const body: string[] = [];
  let y = 10;
  for (const g of groups) {
    body.push(`<text x="10" y="${y + 18}" class="h">${esc(g.heading)}</text>`, `<text x="10" y="${y + 34}" class="n">${esc(g.note)}</text>`);
    y += 44;
    for (const p of g.panels) {
      const { svg, height } = panelSvg(p, y);
      body.push(svg);
      y += height;
    }
    y += 12;
  }
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${y}" viewBox="0 0 ${W} ${y}" font-family="system-ui, -apple-system, Segoe UI, sans-serif">
<style>
.h{font-size:15px;font-weight:600;fill:#111}.n{font-size:11px;fill:#666}.t{font-size:12px;font-weight:600;fill:#333}
.l{font-size:12px;fill:#222}.v{font-size:11px;fill:#333}.b{fill:#9aa5b1}.o{fill:#2f6fde}
.ref{stroke:#d14;stroke-width:1.5;stroke-dasharray:4 3}.rl{font-size:10px;fill:#d14}
</style>
<rect width="100%" height="100%" fill="#fff"/>
${body.join('\n')}
</svg>
`;
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, svg);
  console.log(`chart of ${[...runs.keys()].map((k) => `${k} (${runs.get(k)!.file})`).join(', ')} written to ${path.relative(process.cwd(), out)}`);
}

main();
