// BENCH_PERF=<dir>: `perf record -g` of some of the server's processes over one measurement,
// written to <dir>/<name>.perf.data. perf samples CPU time, kernel included, where V8's own
// profiles (BENCH_PROFILE) sample wall time and leave the kernel out; with
// BENCH_NODE_ARGS=--perf-basic-prof perf names the JavaScript functions too.
import { spawn } from 'node:child_process';
import path from 'node:path';

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

/** Starts recording `pids` when BENCH_PERF is set; the returned function stops it (a no-op otherwise). */
export function recordPerf(name: string, pids: number[]): () => Promise<void> {
  const dir = process.env.BENCH_PERF;
  if (!dir || !pids.length) return async () => {};
  const out = path.join(dir, `${name.replace(/[^a-z0-9]+/gi, '-')}.perf.data`);
  const perf = spawn('perf', ['record', '-q', '-g', '-F', '999', '-p', pids.join(','), '-o', out], { stdio: 'ignore' });
  perf.on('error', (err) => log(`BENCH_PERF: perf did not start (${err.message}; apt-get install linux-perf)`));
  return () =>
    new Promise<void>((resolve) => {
      if (perf.exitCode !== null || perf.pid === undefined) return resolve();
      perf.once('exit', () => resolve());
      perf.kill('SIGINT');
    });
}
