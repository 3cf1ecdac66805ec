// GET /api/v1/auth/session (the check an app makes on every protected request) against a
// hello-world measured in the same run: requests/s, p50 and p99 at 50 connections, the
// server's CPU µs per request, and the ratios. Target: ≥0.9× the hello-world's requests/s
// with the full API-key and session checks, p99 ≤1.5× the hello-world's. A second bare route
// answering the session's very bytes (285 against 17) tells the check's own cost apart from
// the cost of sending a larger answer. A last row exchanges the session for a JWT (POST /api/v1/auth/token).
//
//   npm run bench:session      (or node --import tsx bench/session.ts; BENCH_SECONDS, default 10)
//
// The load generator runs in a process of its own (wrk, else autocannon's CLI:
// bench/lib/http-load.ts), the same for every target. The hello-world is a bare Fastify
// process, one route, logging off (bench/lib/hello.ts); postgate runs as `npm start` runs it
// (the supervisor, control + gateway) on a temporary data dir and free ports. They are measured
// in alternating rounds, so load from outside the run falls on all alike (on a shared machine
// the ratio is the figure). The server's CPU is read from /proc: every process of the server
// (for postgate: supervisor, control and gateway). On a fast machine the ratio to the
// hello-world is bounded by the generator; the CPU per request is not. Loopback only; bounded.
// Writes bench/results/session-<time>.json.
import { prepare } from './lib/prepare.js';

await prepare();

const { startHello, stopChild } = await import('./lib/baseline.js');
const { Stack } = await import('../test/helpers/stack.js');
const { httpGenerator, describeGenerator } = await import('./lib/http-load.js');
const { alternate } = await import('./lib/rounds.js');
const { writeResult } = await import('./lib/results.js');
type StackT = import('../test/helpers/stack.js').Stack;

const SECONDS = Number(process.env.BENCH_SECONDS || 10);
const ROUNDS = 5;
const WARMUP = 2;
const CONNECTIONS = 50;
const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);
const gen = httpGenerator();

type Figures = import('./lib/rounds.js').RoundFigures;

/** A signed-in user of a fresh project: its test key and session token (an email code read through the test key). */
async function signedIn(stack: StackT): Promise<Record<string, string>> {
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
  let same: Awaited<ReturnType<typeof startHello>> | undefined;
  try {
    const postgate = () => [stack.proc!.pid!];
    const headers = await signedIn(stack);
    // A second anchor: the bare route answering the very bytes of the session answer (285 bytes against
    // 17), so what the check itself costs is told apart from what the larger answer costs to send.
    const answer = await fetch(`${stack.url}/api/v1/auth/session`, { headers });
    if (answer.status !== 200) throw new Error(`session check answered ${answer.status}`);
    same = await startHello(await answer.text());
    figures = await alternate(
      gen,
      [
        { name: 'hello-world', req: { url: `${hello.url}/` }, pids: () => [hello.proc.pid!] },
        { name: 'hello-world, same answer', req: { url: `${same.url}/` }, pids: () => [same!.proc.pid!] },
        // Postgate's own trivial route (no key, no session): what the app costs before the auth API does anything.
        { name: 'postgate GET /healthz', req: { url: `${stack.url}/healthz` }, pids: postgate },
        { name: 'GET /api/v1/auth/session', req: { url: `${stack.url}/api/v1/auth/session`, headers }, pids: postgate },
        // The session exchanged for a JWT (auth/jwt): the session check, then an ES256 signature with the cached key.
        { name: 'POST /api/v1/auth/token', req: { url: `${stack.url}/api/v1/auth/token`, method: 'POST', headers }, pids: postgate },
      ],
      { connections: CONNECTIONS, seconds: SECONDS, rounds: ROUNDS, warmup: WARMUP },
      log,
    );
  } finally {
    await stack.stop();
    await stopChild(hello.proc);
    if (same) await stopChild(same.proc);
  }
  const [h, hs, z, s, t] = figures as [Figures, Figures, Figures, Figures, Figures];
  const r2 = (n: number) => Math.round(n * 100) / 100;
  const ratio = {
    throughput: r2(s.rps / h.rps),
    p99: r2(s.p99 / Math.max(h.p99, 1)),
    healthzThroughput: r2(z.rps / h.rps),
    sessionVsHealthz: r2(s.rps / z.rps),
    cpuPerRequest: r2(s.cpuUs / h.cpuUs),
    healthzCpuPerRequest: r2(z.cpuUs / h.cpuUs),
    sameAnswerThroughput: r2(s.rps / hs.rps),
    sameAnswerCpuPerRequest: r2(s.cpuUs / hs.cpuUs),
  };
  console.log(`\n${CONNECTIONS} connections, ${SECONDS} s each in ${ROUNDS} alternating rounds; load: ${describeGenerator(gen)}\n`);
  const cols = ['req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', '× hello req/s', '× hello CPU/req'];
  console.log('what'.padEnd(28) + cols.map((c) => c.padStart(Math.max(c.length + 2, 11))).join(''));
  const rows = [
    ['hello-world', h],
    ['hello-world, same answer', hs],
    ['postgate GET /healthz', z],
    ['GET /api/v1/auth/session', s],
    ['POST /api/v1/auth/token', t],
  ] as const;
  for (const [name, f] of rows) {
    const cells = [Math.round(f.rps), f.p50, f.p99, Math.round(f.cpuUs), r2(f.rps / h.rps).toFixed(2), r2(f.cpuUs / h.cpuUs).toFixed(2)];
    console.log(name.padEnd(28) + cells.map((c, i) => String(c).padStart(Math.max(cols[i]!.length + 2, 11))).join(''));
  }
  console.log(
    `\nsession / hello-world: ${ratio.throughput}× throughput (target ≥ 0.9), ${ratio.p99}× p99 (target ≤ 1.5), ${ratio.cpuPerRequest}× CPU per request`,
  );
  console.log(
    `session / hello-world answering the same bytes: ${ratio.sameAnswerThroughput}× throughput, ${ratio.sameAnswerCpuPerRequest}× CPU per request (what the check itself costs)`,
  );
  console.log(
    `postgate's /healthz / hello-world: ${ratio.healthzThroughput}× throughput, ${ratio.healthzCpuPerRequest}× CPU per request; session / /healthz: ${ratio.sessionVsHealthz}×`,
  );
  console.log(`JWT / session check: ${r2(t.rps / s.rps)}× throughput, ${r2(t.cpuUs / s.cpuUs)}× CPU per request (an ES256 signature on top of the check)`);
  console.log('CPU µs/req: user + system time of every process of the server (postgate: supervisor, control, gateway) over the run, per completed request');
  const file = writeResult('session', {
    generator: gen,
    connections: CONNECTIONS,
    seconds: SECONDS,
    rounds: ROUNDS,
    rows: rows.map(([name, f]) => ({ name, ...f, rps: Math.round(f.rps), cpuUs: Math.round(f.cpuUs * 10) / 10 })),
    ratio,
  });
  console.log(`figures written to ${file}`);
}

await main();
