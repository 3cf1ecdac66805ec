// Every benchmark writes its figures to bench/results/<bench>-<timestamp>.json (not committed);
// `npm run bench:chart` draws the last run of each (bench/chart.ts).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { root } from './prepare.js';

export const resultsDir = path.join(root, 'bench/results');

export interface Meta {
  bench: string;
  date: string;
  commit: string;
  node: string;
  cpus: string;
  /** Load average (1 min) when the run started and when it ended: a busy machine reads high. */
  load: [number, number];
}

const started = os.loadavg()[0]!;

export function meta(bench: string): Meta {
  let commit = '';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    if (dirty) commit += '+changes';
  } catch {
    /* not a git checkout */
  }
  const cpus = os.cpus();
  return {
    bench,
    date: new Date().toISOString(),
    commit,
    node: process.version,
    cpus: `${cpus.length} × ${cpus[0]?.model.trim() ?? '?'}`,
    load: [Math.round(started * 100) / 100, Math.round(os.loadavg()[0]! * 100) / 100],
  };
}

/** Writes the figures with the run's metadata; returns the file's path relative to the checkout. */
export function writeResult(bench: string, figures: Record<string, unknown>): string {
  fs.mkdirSync(resultsDir, { recursive: true });
  const file = path.join(resultsDir, `${bench}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, `${JSON.stringify({ ...meta(bench), ...figures }, null, 2)}\n`);
  return path.relative(root, file);
}
