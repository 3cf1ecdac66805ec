// `node --import tsx bench/scale.ts`: what running on PostgreSQL and Redis costs, in one run.
//
//   SQLite 1+1            one node as `npm start` runs it (the anchor)
//   PostgreSQL 1+1        one node on POSTGATE_DATABASE_URL, no Redis
//   PostgreSQL+Redis 2+2  two nodes (control + gateway each) on one database and one Redis
//
// For each: emails accepted/s (batches of 100 spread over the controls), delivered/s into a
// loopback MX, and CPU ms per delivered message summed over every process that did the work
// (postgate's processes; PostgreSQL's background processes and the backends connected to the
// configuration's own database, read from pg_stat_activity, so other databases' clients on the
// machine are not counted; redis-server: both servers run on this machine, so their CPU is part
// of the cost). Then the session check (GET /api/v1/auth/session,
// load from autocannon's CLI in its own process) on SQLite and on PostgreSQL+Redis, and the
// sign-out propagation delay between two nodes (p50/p99).
//
// On a 2-core machine the 2+2 figure shows the cost of coordination, not a gain: four
// Node processes, PostgreSQL and Redis share two cores. Bounded: BENCH_EMAILS (3000) per
// configuration, 120 s per delivery wait, 10 s per session measurement; loopback only.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { startCluster, type Cluster } from '../test/helpers/cluster.js';
import { startDnsServer } from '../test/helpers/dns-server.js';
import { Stack, sleep, type Project } from '../test/helpers/stack.js';
import { tree } from './lib/rss.js';
import { cpuOf } from './lib/proc.js';
import { startReceiver, type Receiver } from './lib/receiver.js';
import { prepare } from './lib/prepare.js';
import { writeResult } from './lib/results.js';

// The generated code and the compiled tree, so this runs on a fresh clone after `npm install`.
await prepare();

const exec = promisify(execFile);
const EMAILS = Number(process.env.BENCH_EMAILS || 3000);
const BATCH = 100;
const CONCURRENCY = 4;
const SESSION_SECONDS = 10;
const PROPAGATION_SAMPLES = 40;
const log = (msg: string) => process.stderr.write(`[scale] ${msg}\n`);
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

/** CPU seconds (user + system) of each of the given pids (bench/lib/proc.ts reads /proc). */
const cpuByPid = (pids: number[]): Map<number, number> => new Map(pids.map((pid) => [pid, cpuOf(pid).self / 1000]));

/** CPU seconds spent between two readings: a process that started in between counts from its start. */
function cpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let s = 0;
  for (const [pid, t] of after) s += t - (before.get(pid) ?? 0);
  return s;
}

/**
 * PostgreSQL's processes that work for this configuration: its background processes (WAL
 * writer, checkpointer, autovacuum…) and the backends connected to `databaseUrl`'s database.
 */
async function postgresPids(databaseUrl: string): Promise<number[]> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const r = await client.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND (datname = current_database() OR backend_type <> 'client backend')",
    );
    return r.rows.map((row) => row.pid);
  } finally {
    await client.end();
  }
}

/** Every process of the named executables (the Redis server on this machine). */
function pidsNamed(...names: string[]): number[] {
  const out: number[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (names.includes(fs.readFileSync(`/proc/${d}/comm`, 'utf8').trim())) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out;
}

interface Setup {
  name: string;
  nodes: Stack[];
  /** The configuration's database: its PostgreSQL processes are counted. */
  databaseUrl?: string;
  /** Counts redis-server's CPU. */
  redis?: boolean;
  stop(): Promise<void>;
}

interface Figures {
  name: string;
  acceptedPerSec: number;
  deliveredPerSec: number;
  cpuMsPerMessage: number;
}

async function project(node: Stack): Promise<Project> {
  const p = await node.createProject();
  await node.setPlan(p.slug, 'scale', { rate: 1_000_000 });
  await node.verifyDomain(p.slug, 'acme.test');
  return p;
}

async function sendLoad(setup: Setup, sink: Receiver): Promise<Figures> {
  const p = await project(setup.nodes[0]!);
  // Delivery at full speed: the default pacing of unnamed domains (600/min, 10 connections) would measure the throttle.
  await setup.nodes[0]!.cli('throttle', 'set', '--provider', 'other', '--rate', '0', '--connections', '0');
  const before = sink.count();
  const allPids = async () => [
    ...setup.nodes.flatMap((n) => tree(n.proc!.pid!)),
    ...(setup.databaseUrl ? await postgresPids(setup.databaseUrl) : []),
    ...(setup.redis ? pidsNamed('redis-server') : []),
  ];
  const cpu0 = cpuByPid(await allPids());
  const t0 = performance.now();
  let next = 0;
  let accepted = 0;
  const batches = Math.ceil(EMAILS / BATCH);
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < batches) {
        const i = next++;
        const node = setup.nodes[i % setup.nodes.length]!;
        const body = Array.from({ length: BATCH }, (_, k) => ({ from: 'hello@acme.test', to: `r${i}-${k}@ok.test`, subject: `scale ${i}`, text: 'x' }));
        const r = await node.api('POST', '/v1/emails/batch', p.keys.live, body);
        if (r.status === 202) accepted += (r.body.data as Array<{ status?: string }>).filter((d) => d.status === 'queued').length;
      }
    }),
  );
  const acceptSec = (performance.now() - t0) / 1000;
  const until = Date.now() + 120_000;
  while (sink.count() - before < accepted && Date.now() < until) await sleep(50);
  const deliverSec = (performance.now() - t0) / 1000;
  const delivered = sink.count() - before;
  const cpu = cpuBetween(cpu0, cpuByPid(await allPids()));
  if (delivered < accepted) log(`${setup.name}: only ${delivered} of ${accepted} delivered in 120 s`);
  return {
    name: setup.name,
    acceptedPerSec: round(accepted / acceptSec, 0),
    deliveredPerSec: round(delivered / deliverSec, 0),
    cpuMsPerMessage: round((cpu * 1000) / Math.max(1, delivered), 2),
  };
}

let clients = 0;
async function signIn(node: Stack, p: Project, email: string): Promise<string> {
  // A client address of its own per sign-in: one address may ask for 30 codes an hour.
  clients++;
  const h = { 'x-service-key': p.keys.test, 'x-service-client-ip': `10.9.${clients >> 8}.${clients & 255}` };
  await node.api('POST', '/api/v1/auth/sign-in/email-otp/send', undefined, { email }, h);
  const code = (await node.api('GET', `/api/v1/auth/test/code?email=${encodeURIComponent(email)}`, undefined, undefined, h)).body.code;
  const v = await node.api('POST', '/api/v1/auth/sign-in/email-otp/verify', undefined, { email, code }, h);
  if (v.status !== 200) throw new Error(`sign-in failed: ${JSON.stringify(v.body)}`);
  return v.body.token as string;
}

/** GET /session under autocannon's CLI (its own process): requests/s and p99. */
async function sessionRate(node: Stack): Promise<{ rps: number; p99: number }> {
  const p = await project(node);
  const token = await signIn(node, p, 'bench@example.com');
  const bin = path.resolve('node_modules/.bin/autocannon');
  const args = [
    '-j',
    '-c',
    '50',
    '-d',
    String(SESSION_SECONDS),
    '-H',
    `x-service-key=${p.keys.test}`,
    '-H',
    `authorization=Bearer ${token}`,
    `${node.url}/api/v1/auth/session`,
  ];
  const { stdout } = await exec(bin, args, { maxBuffer: 16 * 1024 * 1024 });
  const r = JSON.parse(stdout) as { requests: { average: number }; latency: { p99: number }; non2xx: number };
  if (r.non2xx) log(`session: ${r.non2xx} answers were not 2xx`);
  return { rps: round(r.requests.average, 0), p99: r.latency.p99 };
}

/** Sign-out on node a, then polling node b (which had the session cached) until it answers 401. */
async function propagation(a: Stack, b: Stack): Promise<{ p50: number; p99: number }> {
  const p = await project(a);
  const delays: number[] = [];
  for (let i = 0; i < PROPAGATION_SAMPLES; i++) {
    const token = await signIn(a, p, `prop${i}@example.com`);
    const h = { 'x-service-key': p.keys.test, authorization: `Bearer ${token}` };
    await b.api('GET', '/api/v1/auth/session', undefined, undefined, h);
    await a.api('POST', '/api/v1/auth/sign-out', undefined, {}, h);
    const t0 = performance.now();
    while ((await b.api('GET', '/api/v1/auth/session', undefined, undefined, h)).status === 200) if (performance.now() - t0 > 5000) break;
    delays.push(performance.now() - t0);
  }
  delays.sort((x, y) => x - y);
  return { p50: round(pct(delays, 50), 1), p99: round(pct(delays, 99), 1) };
}

async function main(): Promise<void> {
  const sink = await startReceiver();
  const dns = await startDnsServer([
    { type: 'MX', name: 'ok.test', exchange: 'mx.ok.test', priority: 10 },
    { type: 'A', name: 'mx.ok.test', address: '127.0.0.1' },
  ]);
  const env = { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port), POSTGATE_SYSTEM_FROM: 'no-reply@postgate.test' };
  const config = { smtpRate: 1_000_000 };
  const rows: Figures[] = [];
  const sessions: Record<string, { rps: number; p99: number }> = {};
  let prop: { p50: number; p99: number } | undefined;

  const sqlite = await Stack.start({ env, config });
  try {
    rows.push(await sendLoad({ name: 'SQLite 1+1', nodes: [sqlite], stop: async () => {} }, sink));
    sessions['SQLite 1+1'] = await sessionRate(sqlite);
  } finally {
    await sqlite.stop();
  }

  const runCluster = async (name: string, count: number, redis: boolean, more: (c: Cluster) => Promise<void>) => {
    const c = await startCluster(count, { env, config, ...(redis ? {} : { redis: false }) });
    try {
      rows.push(await sendLoad({ name, nodes: c.nodes, databaseUrl: c.nodes[0]!.env.POSTGATE_DATABASE_URL, redis, stop: c.stop }, sink));
      await more(c);
    } finally {
      await c.stop();
    }
  };
  await runCluster('PostgreSQL 1+1', 1, false, async () => {});
  await runCluster('PostgreSQL+Redis 2+2', 2, true, async (c) => {
    sessions['PostgreSQL+Redis 2+2'] = await sessionRate(c.nodes[0]!);
    prop = await propagation(c.nodes[0]!, c.nodes[1]!);
  });
  await sink.close();
  await dns.close();

  const anchor = rows[0]!;
  console.log('\nconfiguration            accepted/s  delivered/s  CPU ms/msg  × SQLite CPU');
  for (const r of rows)
    console.log(
      `${r.name.padEnd(24)} ${String(r.acceptedPerSec).padStart(10)}  ${String(r.deliveredPerSec).padStart(11)}  ${String(r.cpuMsPerMessage).padStart(10)}  ${round(r.cpuMsPerMessage / anchor.cpuMsPerMessage, 2)}`,
    );
  const s0 = sessions['SQLite 1+1']!;
  const s1 = sessions['PostgreSQL+Redis 2+2']!;
  console.log(`\nsession check: SQLite ${s0.rps} req/s (p99 ${s0.p99} ms), PostgreSQL+Redis ${s1.rps} req/s (p99 ${s1.p99} ms): ${round(s1.rps / s0.rps, 2)}×`);
  if (prop) console.log(`sign-out propagation to the other node: p50 ${prop.p50} ms, p99 ${prop.p99} ms (${PROPAGATION_SAMPLES} samples)`);
  console.log('(2 cores: four Node processes, PostgreSQL and Redis share them; the 2+2 row is the cost of coordination, not a gain)');
  const result = { bench: 'scale', emails: EMAILS, rows, sessions, propagation: prop };
  console.log(JSON.stringify(result));
  console.log(`figures written to ${writeResult('scale', result)}`);
}

await main();
process.exit(0);
