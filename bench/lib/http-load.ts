// HTTP load from a process of its own, the same for the hello-world anchor and for postgate in
// one run: wrk (Debian's `wrk`, installed here when running as root and missing) or autocannon's
// CLI (node_modules/.bin/autocannon). BENCH_HTTP_LOAD=wrk|autocannon picks one. On a 2-core
// machine the generator shares the CPU with the server: the ratio to the hello-world is bounded
// by the generator, the server's CPU per request (read beside it from /proc) is not.
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { root } from './prepare.js';

const exec = promisify(execFile);
const WRK = '/usr/bin/wrk';
const AUTOCANNON = path.join(root, 'node_modules/.bin/autocannon');
/** wrk threads: one leaves the other core to the server. */
const WRK_THREADS = Number(process.env.BENCH_WRK_THREADS || 1);

export type HttpGenerator = 'wrk' | 'autocannon';

/** The generator of this run: wrk when it is (or can be) installed, else autocannon's CLI. */
export function httpGenerator(): HttpGenerator {
  const want = process.env.BENCH_HTTP_LOAD;
  if (want === 'autocannon') return 'autocannon';
  if (!fs.existsSync(WRK) && process.getuid?.() === 0) {
    process.stderr.write('[bench] installing wrk (apt-get)\n');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    let r = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'wrk'], { stdio: 'inherit', env });
    if (r.status !== 0) {
      spawnSync('apt-get', ['update'], { stdio: 'inherit', env });
      r = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'wrk'], { stdio: 'inherit', env });
    }
  }
  if (fs.existsSync(WRK)) return 'wrk';
  if (want === 'wrk') throw new Error('BENCH_HTTP_LOAD=wrk but wrk is not installed (apt-get install wrk)');
  return 'autocannon';
}

export const describeGenerator = (g: HttpGenerator) =>
  g === 'wrk' ? `wrk (${WRK_THREADS} thread${WRK_THREADS > 1 ? 's' : ''}), its own process` : "autocannon's CLI, its own process";

export interface HttpRequest {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface HttpRun {
  /** Completed requests (any status). */
  requests: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  /** Answers outside 2xx (wrk: 4xx and 5xx). */
  non2xx: number;
  /** Connection errors and timeouts. */
  errors: number;
}

/** One load run of `seconds` at `connections` connections. */
export async function httpLoad(gen: HttpGenerator, req: HttpRequest, connections: number, seconds: number): Promise<HttpRun> {
  seconds = Math.max(1, Math.round(seconds)); // whole seconds: wrk takes no fractions
  return gen === 'wrk' ? wrk(req, connections, seconds) : autocannon(req, connections, seconds);
}

async function wrk(req: HttpRequest, connections: number, seconds: number): Promise<HttpRun> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-wrk-'));
  try {
    const lua: string[] = [];
    if (req.method) lua.push(`wrk.method = ${JSON.stringify(req.method)}`);
    if (req.body !== undefined) {
      fs.writeFileSync(path.join(dir, 'body'), req.body);
      lua.push(`local f = io.open(${JSON.stringify(path.join(dir, 'body'))}, "rb")`, 'wrk.body = f:read("*a")', 'f:close()');
    }
    for (const [k, v] of Object.entries(req.headers ?? {})) lua.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
    lua.push(
      'done = function(summary, latency, requests)',
      '  local e = summary.errors',
      '  io.write(string.format("RESULT %d %d %f %f %d %d\\n", summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), e.status, e.connect + e.read + e.write + e.timeout))',
      'end',
    );
    fs.writeFileSync(path.join(dir, 'run.lua'), `${lua.join('\n')}\n`);
    const threads = Math.min(WRK_THREADS, connections);
    const { stdout } = await exec(
      WRK,
      ['-t', String(threads), '-c', String(connections), '-d', `${seconds}s`, '--timeout', '10s', '-s', path.join(dir, 'run.lua'), req.url],
      {
        maxBuffer: 16 * 1024 * 1024,
      },
    );
    const m = /^RESULT (\d+) (\d+) ([\d.]+) ([\d.]+) (\d+) (\d+)$/m.exec(stdout);
    if (!m) throw new Error(`wrk printed no result:\n${stdout}`);
    const [requests, us, p50, p99, status, errors] = m.slice(1).map(Number) as [number, number, number, number, number, number];
    return { requests, seconds: us / 1e6, rps: requests / (us / 1e6), p50: p50 / 1000, p99: p99 / 1000, non2xx: status, errors };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function autocannon(req: HttpRequest, connections: number, seconds: number): Promise<HttpRun> {
  const args = ['-j', '-c', String(connections), '-d', String(seconds)];
  if (req.method) args.push('-m', req.method);
  for (const [k, v] of Object.entries(req.headers ?? {})) args.push('-H', `${k}=${v}`);
  if (req.body !== undefined) args.push('-b', req.body);
  args.push(req.url);
  const { stdout } = await exec(AUTOCANNON, args, { maxBuffer: 64 * 1024 * 1024 });
  const r = JSON.parse(stdout) as {
    requests: { total: number; average: number };
    latency: { p50: number; p99: number };
    duration: number;
    non2xx: number;
    errors: number;
    timeouts: number;
  };
  return {
    requests: r.requests.total,
    seconds: r.duration,
    rps: r.requests.total / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  };
}
