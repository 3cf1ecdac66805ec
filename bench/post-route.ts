// `node --import tsx bench/post-route.ts`: what a POST with a small JSON body costs a server that does
// nothing with it, next to the hello-world's GET, in alternating rounds: the ceiling `POST /v1/emails`
// is measured under. Three bare servers, each a process of its own (bench/lib/hello.ts):
//
//   hello-world GET       Fastify, one route, logging off (the anchor of every HTTP benchmark)
//   Fastify POST          the same app's POST /: the send request's body (bench:send's) through a
//                         schema, answered 202 {"id"}
//   node:http POST        no framework: the body read, parsed, answered the same way
//
// requests/s, p50/p99, the server's CPU µs per request and the ratio to the hello-world, the load from
// wrk (else autocannon's CLI) in its own process at 32 connections, as bench:send's HTTP rows.
// BENCH_SECONDS (10) per target, in 5 rounds. Loopback only. Writes bench/results/post-route-<time>.json.
import { prepare } from './lib/prepare.js';

await prepare();

const { startHello, stopChild } = await import('./lib/baseline.js');
const { httpGenerator, httpLoad, describeGenerator } = await import('./lib/http-load.js');
const { cpuMs } = await import('./lib/proc.js');
const { writeResult } = await import('./lib/results.js');
type HttpRequest = import('./lib/http-load.js').HttpRequest;
type HttpRun = import('./lib/http-load.js').HttpRun;

const SECONDS = Number(process.env.BENCH_SECONDS || 10);
const ROUNDS = 5;
const WARMUP = 2;
const CONNECTIONS = 32;
const gen = httpGenerator();
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
// The body bench:send posts to /v1/emails.
const body = JSON.stringify({
  from: 'Bench <bench@bench.test>',
  to: 'r@ok.test',
  subject: 'Benchmark',
  text: 'Hello from the benchmark. This is a short transactional message body.',
});

const fastify = await startHello();
const raw = await startHello(undefined, true);
const post = (url: string): HttpRequest => ({ url: `${url}/`, method: 'POST', headers: { 'content-type': 'application/json' }, body });
const targets = [
  { name: 'hello-world GET', req: { url: `${fastify.url}/` }, pid: fastify.proc.pid! },
  { name: 'Fastify POST', req: post(fastify.url), pid: fastify.proc.pid! },
  { name: 'node:http POST', req: post(raw.url), pid: raw.proc.pid! },
];

async function run(t: (typeof targets)[number], seconds: number): Promise<HttpRun & { cpu: number }> {
  const c0 = cpuMs([t.pid]);
  const r = await httpLoad(gen, t.req, CONNECTIONS, seconds);
  const cpu = cpuMs([t.pid]) - c0;
  if (r.non2xx || r.errors) throw new Error(`${t.name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return { ...r, cpu };
}

try {
  for (const t of targets) await run(t, WARMUP);
  const results: Array<Array<HttpRun & { cpu: number }>> = targets.map(() => []);
  for (let i = 0; i < ROUNDS; i++) for (const [j, t] of targets.entries()) results[j]!.push(await run(t, SECONDS / ROUNDS));
  const rows = results.map((rs, j) => {
    const requests = rs.reduce((n, r) => n + r.requests, 0);
    return {
      name: targets[j]!.name,
      rps: round(requests / rs.reduce((n, r) => n + r.seconds, 0), 0),
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      cpuUs: round((rs.reduce((n, r) => n + r.cpu, 0) * 1000) / requests),
      rounds: rs.map((r) => Math.round(r.rps)),
    };
  });
  const anchor = rows[0]!;
  console.log(
    `\nA POST that does nothing, next to the hello-world; load: ${describeGenerator(gen)}, ${CONNECTIONS} connections, ${SECONDS} s each in ${ROUNDS} alternating rounds\n`,
  );
  console.log('| server | requests/s | × hello-world | p50 ms | p99 ms | CPU µs/req | rounds (req/s) |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.name} | ${r.rps} | ${round(r.rps / anchor.rps, 2)} | ${r.p50} | ${r.p99} | ${r.cpuUs} | ${r.rounds.join(' ')} |`);
  console.log(`\nfigures written to ${writeResult('post-route', { generator: gen, connections: CONNECTIONS, seconds: SECONDS, rows })}`);
} finally {
  await stopChild(fastify.proc);
  await stopChild(raw.proc);
}
