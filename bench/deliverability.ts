// `node --import tsx bench/deliverability.ts`: end-to-end throughput of postgate with
// DKIM signing and pacing on, from the API into a loopback receiver, next to vanilla
// Haraka relaying the same load over SMTP into the same receiver, in the same run
// (the machine is shared and noisy: the ratio is the figure). Also the CPU time per
// message of each stage (accept, build, sign, deliver) and the memory of the whole stack
// (each mapped file counted once, bench/lib/rss.ts; the RSS sum is printed beside it).
//
//   vanilla Haraka   Haraka as shipped: relay plugin (ACL 127.0.0.1, force-routed to the
//                    sink), queue on disk with fsync, its own outbound; fed over SMTP by
//                    BENCH_CONNECTIONS pooled connections.
//   postgate         `npm start` (supervisor, control, gateway) fed by POST /v1/emails/batch
//                    (100 per request, BENCH_CONNECTIONS at once): validation, the group
//                    commit, gRPC to the gateway, MIME building there, DKIM (RSA-2048, the
//                    domain's key from POST /v1/domains), pacing (provider lookup, warm-up
//                    counters, rate and connection admission; limits set high enough not to
//                    bind), Haraka's queue, delivery, and every event back to control.
//
// Both wait until the receiver has every message; rounds alternate (BENCH_ROUNDS), and the
// best round of each is reported. Logs at warn level for both.
// dkim.ts first: it tunes mailauth's key parsing before anything else loads mailauth.
import { signMessage } from '../gateway/dkim.js';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import nodemailer from 'nodemailer';
import { Stack, sleep } from '../test/helpers/stack.js';
import { startDnsServer } from '../test/helpers/dns-server.js';
import { freePort } from '../test/helpers/ports.js';
import { publishDomain } from '../test/e2e/deliverability/helpers.js';
import { buildMime, type MessageParts } from '../gateway/mime.js';
import { newDkimKey } from '../control/domains/records.js';
import { cpuMs, startCountingSink, startVanillaHaraka } from './deliverability/lib.js';
import { peakMemory, type Memory } from './lib/rss.js';
import { build } from '../deploy/build.js';

// Postgate runs as `npm start` runs it, from the compiled tree: built now, so it matches the sources.
build();

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const N = Number(process.env.BENCH_MESSAGES || 3000);
const ROUNDS = Number(process.env.BENCH_ROUNDS || 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS || 8);
/** The gateway's connection limit to the loopback MX (its `other` throttle); vanilla Haraka has none below concurrency_max. */
const MX_CONNECTIONS = Number(process.env.BENCH_MX_CONNECTIONS || 500);
const TIMEOUT_MS = 180_000;
const DOMAIN = 'bench.test';
const BODY = 'Hello from the benchmark. This is a short transactional message body, about as long as a receipt notice.';

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;

interface Run {
  perSecond: number;
  seconds: number;
  cpu: Record<string, number>;
  /** Peak memory: shared files counted once (bench/lib/rss.ts); for one process, its RSS. */
  peakMb: number;
  /** Peak of the processes' RSS added up. */
  peakRssSumMb: number;
}

const peaks = (m: Memory): Pick<Run, 'peakMb' | 'peakRssSumMb'> => ({ peakMb: m.stack / 2 ** 20, peakRssSumMb: m.rssSum / 2 ** 20 });

async function waitDelivered(count: () => number, target: number, t0: number): Promise<number> {
  while (count() < target) {
    if (performance.now() - t0 > TIMEOUT_MS) throw new Error(`only ${count()} of ${target} delivered in ${TIMEOUT_MS / 1000} s`);
    await sleep(20);
  }
  return performance.now();
}

async function main(): Promise<void> {
  const sink = await startCountingSink();
  const dns = await startDnsServer([
    { type: 'MX', name: DOMAIN, exchange: `mx.${DOMAIN}`, priority: 10 },
    { type: 'A', name: `mx.${DOMAIN}`, address: '127.0.0.1' },
  ]);
  const vanilla = await startVanillaHaraka(root, await freePort(), DOMAIN, sink.port, 1000, dns.address);
  const stack = await Stack.start({
    env: {
      POSTGATE_DNS_SERVERS: dns.address,
      POSTGATE_DELIVERY_PORT: String(sink.port),
      POSTGATE_SENDING_IPS: '127.0.0.1',
      POSTGATE_LOG_LEVEL: 'warn',
      // BENCH_NODE_ARGS: Node flags for control and the gateway (e.g. heap limits), via the supervisor.
      ...(process.env.BENCH_NODE_ARGS ? { POSTGATE_NODE_ARGS: process.env.BENCH_NODE_ARGS } : {}),
      // BENCH_PROFILE=<dir>: CPU profiles of the stack's processes, written when they stop.
      ...(process.env.BENCH_PROFILE ? { NODE_OPTIONS: `--require ${path.join(root, 'bench/deliverability/profile-preload.cjs')}` } : {}),
    },
    config: { delivery: { retryDelays: [5], maxTempFailures: 5, connectTimeout: 10, concurrency: 1000 } },
  });
  try {
    const project = await stack.createProject('bench', 'Benchmark');
    await stack.setPlan('bench', 'scale', { daily_quota: 100_000_000, monthly_quota: 100_000_000, rate: 100_000 });
    // A real sender domain: its DKIM key signs every message; its SPF/DMARC are in the DNS.
    await publishDomain(stack, project.keys.live, dns, 'acme.test');
    // Pacing stays on: every message is classified and counted, and admitted by rate and
    // connection limits of its provider; the limits are set where a loopback MX needs them.
    await stack.admin('POST', '/admin/v1/throttles/other', { daily_norm: 100_000_000, rate_per_minute: 10_000_000, connections: MX_CONNECTIONS });

    const auth = { authorization: `Bearer ${project.keys.live}`, 'content-type': 'application/json' };
    let seq = 0;
    const request = () => ({ from: 'Acme <hello@acme.test>', to: `r${seq++}@${DOMAIN}`, subject: 'Your receipt', text: BODY });

    const runPostgate = async (n: number): Promise<Run> => {
      const pids = { control: stack.pid('control'), gateway: stack.pid('gateway') };
      const cpu0 = { control: cpuMs(pids.control), gateway: cpuMs(pids.gateway) };
      const mem = peakMemory(() => stack.proc!.pid!);
      const before = sink.count();
      const t0 = performance.now();
      let next = 0;
      const client = async () => {
        while (next < n) {
          const size = Math.min(100, n - next);
          next += size;
          const body = JSON.stringify(Array.from({ length: size }, request));
          const r = await fetch(`${stack.url}/v1/emails/batch`, { method: 'POST', headers: auth, body });
          const text = await r.text();
          if (r.status !== 202 || text.includes('"code"')) throw new Error(`batch refused: ${r.status} ${text.slice(0, 300)}`);
        }
      };
      await Promise.all(Array.from({ length: CONNECTIONS }, client));
      const accepted = performance.now();
      const t1 = await waitDelivered(sink.count, before + n, t0);
      await sleep(300); // the last events reach control
      const cpu = { control: (cpuMs(pids.control) - cpu0.control) / n, gateway: (cpuMs(pids.gateway) - cpu0.gateway) / n };
      const m = mem.stop();
      const each = { supervisor: stack.proc!.pid!, ...pids };
      log(
        `postgate: accepted ${n} in ${round((accepted - t0) / 1000)} s, delivered in ${round((t1 - t0) / 1000)} s; peak RSS MB ${Object.entries(each)
          .map(([k, pid]) => `${k} ${round((m.rssOf.get(pid) ?? 0) / 2 ** 20)}`)
          .join(', ')}`,
      );
      return { perSecond: n / ((t1 - t0) / 1000), seconds: (t1 - t0) / 1000, cpu, ...peaks(m) };
    };

    const smtp = nodemailer.createTransport({
      pool: true,
      maxConnections: CONNECTIONS,
      maxMessages: Infinity,
      host: '127.0.0.1',
      port: vanilla.port,
      secure: false,
      ignoreTLS: true,
    });
    const runVanilla = async (n: number): Promise<Run> => {
      const pid = vanilla.proc.pid!;
      const cpu0 = cpuMs(pid);
      const mem = peakMemory(() => pid);
      const before = sink.count();
      const t0 = performance.now();
      await Promise.all(Array.from({ length: n }, () => smtp.sendMail({ ...request(), from: 'Acme <hello@acme.test>' })));
      const t1 = await waitDelivered(sink.count, before + n, t0);
      return { perSecond: n / ((t1 - t0) / 1000), seconds: (t1 - t0) / 1000, cpu: { haraka: (cpuMs(pid) - cpu0) / n }, ...peaks(mem.stop()) };
    };

    // Warm both up (JIT, connections, first-day pacing state), then alternate.
    log('warming up');
    await runVanilla(200);
    await runPostgate(200);
    const results: { vanilla: Run[]; postgate: Run[] } = { vanilla: [], postgate: [] };
    for (let r = 0; r < ROUNDS; r++) {
      const v = await runVanilla(N);
      log(`round ${r + 1}: vanilla Haraka ${round(v.perSecond)} msgs/s`);
      results.vanilla.push(v);
      const p = await runPostgate(N);
      log(`round ${r + 1}: postgate ${round(p.perSecond)} msgs/s`);
      results.postgate.push(p);
    }
    smtp.close();

    // Stage costs in isolation (this process, one at a time): building the MIME message and signing it.
    const key = newDkimKey();
    const stageMs = async (n: number, fn: (i: number) => Promise<unknown>) => {
      for (let i = 0; i < 50; i++) await fn(i);
      const c0 = process.cpuUsage();
      for (let i = 0; i < n; i++) await fn(i);
      const c = process.cpuUsage(c0);
      return (c.user + c.system) / 1000 / n;
    };
    const parts = (): MessageParts => ({
      createdAtMs: BigInt(Date.now()),
      serviceHeaders: { 'Feedback-ID': 'p:transactional:postgate' },
      from: 'Acme <hello@acme.test>',
      to: ['r@bench.test'],
      cc: [],
      replyTo: [],
      subject: 'Your receipt',
      text: BODY,
      html: '',
      headers: {},
    });
    const sample = await buildMime('00000000-0000-4000-8000-000000000000', parts());
    const buildMs = await stageMs(500, (i) => buildMime(`00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, parts()));
    const sign = await stageMs(500, () => signMessage(sample, { domain: 'acme.test', selector: 'pg202601', privateKeyPem: key.privatePem }));

    const best = (runs: Run[]) => runs.reduce((a, b) => (b.perSecond > a.perSecond ? b : a));
    const v = best(results.vanilla);
    const p = best(results.postgate);
    const ratio = p.perSecond / v.perSecond;
    const stages = {
      accept: round(p.cpu.control!, 2),
      build: round(buildMs, 2),
      sign: round(sign, 2),
      deliver: round(Math.max(0, p.cpu.gateway! - buildMs - sign), 2),
    };
    const peakStack = Math.max(...results.postgate.map((r) => r.peakMb));
    const peakRssSum = Math.max(...results.postgate.map((r) => r.peakRssSumMb));
    const lines = [
      '',
      `Deliverability benchmark: ${N} messages per round, ${ROUNDS} rounds (best shown), ${CONNECTIONS} client connections, loopback MX (gateway limit ${MX_CONNECTIONS} connections)`,
      '',
      '| | msgs/s (all rounds) | CPU ms/msg | peak memory |',
      '|---|---|---|---|',
      `| vanilla Haraka relay (SMTP in) | ${round(v.perSecond)} (${results.vanilla.map((r) => round(r.perSecond)).join(', ')}) | ${round(v.cpu.haraka!, 2)} | ${round(v.peakMb)} MB |`,
      `| postgate API → DKIM + pacing → MX | ${round(p.perSecond)} (${results.postgate.map((r) => round(r.perSecond)).join(', ')}) | control ${round(p.cpu.control!, 2)} + gateway ${round(p.cpu.gateway!, 2)} | ${round(peakStack)} MB (whole stack; RSS sum ${round(peakRssSum)} MB) |`,
      '',
      `ratio postgate / vanilla Haraka: ${round(ratio, 2)}× (target ≥ 1.0×, aim 1.5×); stack memory ${peakStack < 300 ? 'under' : 'OVER'} 300 MB`,
      "memory: each mapped file (the node executable, shared libraries) counted once, plus every process's own memory; the RSS sum counts node's ~40 MB of code once per process",
      '',
      'CPU ms per message by stage (postgate):',
      `  accept  ${stages.accept}  (control: HTTP, validation, group commit, dispatch over gRPC, events back)`,
      `  build   ${stages.build}  (gateway: nodemailer MIME, measured alone)`,
      `  sign    ${stages.sign}  (mailauth DKIM RSA-2048 relaxed/relaxed, measured alone)`,
      `  deliver ${stages.deliver}  (gateway: Haraka queue + SMTP out, pacing, outbox events; minus build and sign)`,
      '',
    ];
    process.stdout.write(lines.join('\n'));
    process.stdout.write(
      `${JSON.stringify({ bench: 'deliverability', messages: N, rounds: ROUNDS, vanilla: results.vanilla, postgate: results.postgate, ratio: round(ratio, 3), stages, peakStackMb: round(peakStack), peakRssSumMb: round(peakRssSum) })}\n`,
    );
  } finally {
    await stack.stop();
    await vanilla.close();
    await sink.close();
    await dns.close();
  }
}

await main();
