// `node --import tsx bench/post-route.ts`: what a POST with a small JSON body costs a server that does
// nothing with it, next to the hello-world's GET, in alternating rounds: the ceiling `POST /v1/emails`
// is measured under. Three bare servers, each a process of its own (bench/lib/hello.ts):
//
//   hello-world GET       Fastify, one route, logging off (the anchor of every HTTP benchmark)
//   Fastify POST          the same app's POST /: the send request's body (bench:send's) through a
//                         schema, answered 202 {"id"}
//   node:http POST        no framework: the body read, parsed, answered the same way
//   Fastify POST + store  the Fastify POST, which first records the email through postgate's SQLite
//                         store (a temporary data dir, checkpointed from this process as the
//                         supervisor does for control) and answers once it is on disk: the floor of
//                         `POST /v1/emails` with none of its own checks
//
// requests/s, p50/p99, the server's CPU µs per request and the ratio to the hello-world, the load from
// wrk (else autocannon's CLI) in its own process at 32 connections, as bench:send's HTTP rows.
// BENCH_SECONDS (10) per target, in 5 rounds. Loopback only. Writes bench/results/post-route-<time>.json.
import { prepare } from './lib/prepare.js';

await prepare();

const fs = await import('node:fs');
const os = await import('node:os');
const path = await import('node:path');
const { startHello, stopChild } = await import('./lib/baseline.js');
const { WalCheckpointer } = await import('../core/sqlite/checkpointer.js');
const { controlDbFile } = await import('../core/data-files.js');
const { httpGenerator, describeGenerator } = await import('./lib/http-load.js');
const { alternate } = await import('./lib/rounds.js');
const { writeResult } = await import('./lib/results.js');
type HttpRequest = import('./lib/http-load.js').HttpRequest;

const SECONDS = Number(process.env.BENCH_SECONDS || 10);
const ROUNDS = 5;
const WARMUP = 2;
const CONNECTIONS = 32;
const gen = httpGenerator();
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;
// The body bench:send posts to /v1/emails.
const body = JSON.stringify({
  from: 'Bench <bench@bench.test>',
  to: 'r@ok.test',
  subject: 'Benchmark',
  text: 'Hello from the benchmark. This is a short transactional message body.',
});

const fastify = await startHello();
const raw = await startHello(undefined, true);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-post-route-'));
const stored = await startHello(undefined, false, dataDir);
// As the supervisor does for control: the WAL copied into the database from another process.
const checkpointer = new WalCheckpointer([controlDbFile(dataDir)]);
checkpointer.start();
const post = (url: string): HttpRequest => ({ url: `${url}/`, method: 'POST', headers: { 'content-type': 'application/json' }, body });
const targets = [
  { name: 'hello-world GET', req: { url: `${fastify.url}/` }, pids: () => [fastify.proc.pid!] },
  { name: 'Fastify POST', req: post(fastify.url), pids: () => [fastify.proc.pid!] },
  { name: 'node:http POST', req: post(raw.url), pids: () => [raw.proc.pid!] },
  { name: 'Fastify POST + store', req: post(stored.url), pids: () => [stored.proc.pid!] },
];

try {
  const figures = await alternate(gen, targets, { connections: CONNECTIONS, seconds: SECONDS, rounds: ROUNDS, warmup: WARMUP });
  const rows = figures.map((f, j) => ({ name: targets[j]!.name, ...f, rps: round(f.rps, 0), cpuUs: round(f.cpuUs) }));
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
  await stopChild(stored.proc);
  checkpointer.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
