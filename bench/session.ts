// GET /api/v1/auth/session (the check an app makes on every protected request)
// against a hello-world measured in the same run: requests/s, p50 and p99 at
// 50 connections, and the ratios. Target: ≥0.8× the hello-world's requests/s
// with the full API-key and session checks, p99 ≤1.5× the hello-world's.
//
//   node --import tsx bench/session.ts      (BENCH_SECONDS, default 10)
//
// The hello-world is a bare Fastify process, one route, logging off
// (bench/lib/hello.ts); postgate runs as `npm start` runs it (the supervisor,
// control + gateway) on a temporary data dir and free ports. The two run side
// by side and are measured in alternating rounds, so load from outside the run
// falls on both alike (the machine is shared; the ratio is the figure).
// Everything stays on loopback; each measurement is bounded.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHello, stopChild } from './lib/baseline.js';
import autocannon, { type Result } from 'autocannon';
import { Stack } from '../test/helpers/stack.js';
import { build } from '../deploy/build.js';

// Postgate runs as `npm start` runs it, from the compiled tree: built now, so it matches the sources.
build();

const _root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SECONDS = Number(process.env.BENCH_SECONDS || 10);
const ROUNDS = 5;
const WARMUP = 2;
const CONNECTIONS = 50;
const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

interface Target {
  name: string;
  url: string;
  headers?: Record<string, string>;
}

interface Figures {
  rps: number;
  p50: number;
  p99: number;
}

async function run(t: Target, seconds: number): Promise<Result> {
  const r = await autocannon({ url: t.url, connections: CONNECTIONS, duration: seconds, headers: t.headers ?? {} });
  if (r.non2xx || r.errors || r.timeouts) throw new Error(`${t.name}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
  return r;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Requests/s over all rounds; the median round's p50 and p99. */
async function compare(targets: Target[]): Promise<Figures[]> {
  for (const t of targets) await run(t, WARMUP);
  const results: Result[][] = targets.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, t] of targets.entries()) results[i]!.push(await run(t, SECONDS / ROUNDS));
  }
  return results.map((rs, i) => {
    const f: Figures = {
      rps: rs.reduce((n, r) => n + r.requests.total, 0) / rs.reduce((n, r) => n + r.duration, 0),
      p50: median(rs.map((r) => r.latency.p50)),
      p99: median(rs.map((r) => r.latency.p99)),
    };
    log(
      `${targets[i]!.name}: ${Math.round(f.rps)} req/s, p50 ${f.p50} ms, p99 ${f.p99} ms (rounds: ${rs.map((r) => Math.round(r.requests.average)).join(' ')} req/s)`,
    );
    return f;
  });
}

/** A signed-in user of a fresh project: its test key and session token (an email code read through the test key). */
async function signedIn(stack: Stack): Promise<Record<string, string>> {
  const p = await stack.createProject('bench');
  const key = { 'x-service-key': p.keys.test };
  await stack.api('POST', '/api/v1/auth/sign-in/email-otp/send', undefined, { email: 'bench@example.com' }, key);
  const { code } = (await stack.api('GET', '/api/v1/auth/test/code?email=bench@example.com', undefined, undefined, key)).body;
  const { token } = (await stack.api('POST', '/api/v1/auth/sign-in/email-otp/verify', undefined, { email: 'bench@example.com', code }, key)).body;
  if (!token) throw new Error('could not sign in');
  return { ...key, authorization: `Bearer ${token}` };
}

async function main(): Promise<void> {
  const hello = await startHello();
  const stack = await Stack.start({ env: { POSTGATE_LOG_LEVEL: 'warn' } });
  let figures: Figures[];
  try {
    figures = await compare([
      { name: 'hello-world', url: `${hello.url}/` },
      // Postgate's own trivial route (no key, no session): what the app costs before the auth API does anything.
      { name: 'postgate GET /healthz', url: `${stack.url}/healthz` },
      { name: 'GET /api/v1/auth/session', url: `${stack.url}/api/v1/auth/session`, headers: await signedIn(stack) },
    ]);
  } finally {
    await stack.stop();
    await stopChild(hello.proc);
  }
  const [h, z, s] = figures as [Figures, Figures, Figures];
  const r2 = (n: number) => Math.round(n * 100) / 100;
  const ratio = {
    throughput: r2(s.rps / h.rps),
    p99: r2(s.p99 / Math.max(h.p99, 1)),
    healthzThroughput: r2(z.rps / h.rps),
    sessionVsHealthz: r2(s.rps / z.rps),
  };
  console.log(`\n${CONNECTIONS} connections, ${SECONDS} s each in ${ROUNDS} alternating rounds\n`);
  console.log('what'.padEnd(28) + 'req/s'.padStart(9) + 'p50 ms'.padStart(9) + 'p99 ms'.padStart(9));
  for (const [name, f] of [
    ['hello-world', h],
    ['postgate GET /healthz', z],
    ['GET /api/v1/auth/session', s],
  ] as const) {
    console.log(name.padEnd(28) + String(Math.round(f.rps)).padStart(9) + String(f.p50).padStart(9) + String(f.p99).padStart(9));
  }
  console.log(`\nsession / hello-world: ${ratio.throughput}× throughput (target ≥ 0.8), ${ratio.p99}× p99 (target ≤ 1.5)`);
  console.log(`postgate's /healthz / hello-world: ${ratio.healthzThroughput}×; session / /healthz: ${ratio.sessionVsHealthz}×`);
  console.log(JSON.stringify({ bench: 'session', connections: CONNECTIONS, seconds: SECONDS, rounds: ROUNDS, hello: h, healthz: z, session: s, ratio }));
}

await main();
