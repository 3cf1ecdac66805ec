// `node --import tsx bench/queue-status.ts`: what reading the live delivery state costs with a large
// deferred queue. A stack (SQLite, one gateway) gets BENCH_DEFERRED (50,000) emails over the batch API,
// spread over BENCH_PROJECTS (10) projects and four receiving providers whose MX (loopback DNS) points
// at a closed loopback port: every attempt fails to connect and the mail waits, deferred (network), an
// hour before its retry. Then, with the queue at rest:
//
//   GET /admin/v1/queue/status (every provider), ?provider=google, ?project=<slug>, BENCH_READS (200)
//   times each, one after another: latency p50/p95/max, and control's and the gateway's CPU ms per
//   read (/proc, the whole process: anything else they do meanwhile counts too);
//   `postgate queue status` and `--json` (the CLI, a process of its own), BENCH_CLI_RUNS (10) times:
//   wall time and control's CPU per run.
//
// The state is kept as counts while the queue changes, so a read should cost the same with 50 or 50,000
// deferred messages: BENCH_DEFERRED=500 gives the small-queue anchor in the same way. Bounded: the
// setup waits at most 600 s for the queue to settle; loopback only. Figures go to bench/results.
import { prepare } from './lib/prepare.js';

await prepare();

const { Stack, sleep } = await import('../test/helpers/stack.js');
const { startDnsServer } = await import('../test/helpers/dns-server.js');
const { freePort } = await import('../test/helpers/ports.js');
const { cpuOf } = await import('./lib/proc.js');
const { writeResult } = await import('./lib/results.js');

const DEFERRED = Number(process.env.BENCH_DEFERRED ?? 50_000);
const PROJECTS = Number(process.env.BENCH_PROJECTS ?? 10);
const READS = Number(process.env.BENCH_READS ?? 200);
const CLI_RUNS = Number(process.env.BENCH_CLI_RUNS ?? 10);
const DOMAINS = ['gmail.com', 'outlook.com', 'yahoo.com', 'example-corp.test'];

const closed = await freePort(); // nothing listens there: every connection is refused at once
const dns = await startDnsServer(
  DOMAINS.flatMap((d) => [
    { type: 'MX' as const, name: d, exchange: `mx.${d}`, priority: 10 },
    { type: 'A' as const, name: `mx.${d}`, address: '127.0.0.1' },
  ]),
);
const unlimited = { dailyNorm: 0, growth: 1, maxDailyNorm: 0, ratePerMinute: 0, connections: 0 };
const stack = await Stack.start({
  env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(closed), POSTGATE_LOG_LEVEL: 'warn' },
  config: {
    delivery: { retryDelays: [3600], maxTempFailures: 5, connectTimeout: 2 },
    pacing: { providers: { google: unlimited, microsoft: unlimited, yahoo: unlimited, other: unlimited }, sameSubjectDailyLimit: 10_000_000 },
  },
});

try {
  const projects: Array<{ slug: string; key: string }> = [];
  for (let i = 0; i < PROJECTS; i++) {
    const p = await stack.createProject(`bench${i}`);
    await stack.setPlan(p.slug, 'scale');
    await stack.verifyDomain(p.slug, 'acme.test');
    projects.push({ slug: p.slug, key: p.keys.live });
  }

  // Accept: 100 per batch request, a few requests at once.
  const t0 = Date.now();
  let next = 0;
  const batches = Math.ceil(DEFERRED / 100);
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let b = next++; b < batches; b = next++) {
        const p = projects[b % projects.length]!;
        const n = Math.min(100, DEFERRED - b * 100);
        const body = Array.from({ length: n }, (_, i) => ({
          from: 'hello@acme.test',
          to: `u${b}-${i}@${DOMAINS[(b + i) % DOMAINS.length]}`,
          subject: `receipt ${b}-${i}`,
          text: 'Thanks for your order.',
        }));
        const r = await stack.api('POST', '/v1/emails/batch', p.key, body);
        if (r.status >= 300) throw new Error(`batch ${b}: ${r.status} ${JSON.stringify(r.body)}`);
      }
    }),
  );
  const acceptedS = (Date.now() - t0) / 1000;

  // Wait until every message has had its attempt and waits, deferred.
  const status = async (q = '') => (await stack.admin('GET', `/admin/v1/queue/status${q}`)) as any;
  const deferredTotal = (s: any) =>
    (s.providers as any[]).reduce((n, p) => n + Object.values(p.queue.deferred as Record<string, number>).reduce((a, b) => a + b, 0), 0);
  const deadline = Date.now() + 600_000;
  let last = 0;
  for (;;) {
    last = deferredTotal(await status());
    if (last >= DEFERRED) break;
    if (Date.now() > deadline) throw new Error(`only ${last} of ${DEFERRED} deferred after 600 s`);
    await sleep(2000);
  }
  const settledS = (Date.now() - t0) / 1000;
  await sleep(3000); // let the event stream and the store go quiet

  const control = stack.pid('control');
  const gateway = stack.pid('gateway');
  const cpu = (pid: number) => cpuOf(pid).self;
  const pct = (xs: number[], p: number) => xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

  async function reads(label: string, q: string) {
    const lat: number[] = [];
    const c0 = cpu(control);
    const g0 = cpu(gateway);
    for (let i = 0; i < READS; i++) {
      const t = performance.now();
      await status(q);
      lat.push(performance.now() - t);
    }
    const row = {
      read: label,
      p50_ms: +pct(lat, 50).toFixed(2),
      p95_ms: +pct(lat, 95).toFixed(2),
      max_ms: +Math.max(...lat).toFixed(2),
      control_cpu_ms_per_read: +((cpu(control) - c0) / READS).toFixed(3),
      gateway_cpu_ms_per_read: +((cpu(gateway) - g0) / READS).toFixed(3),
    };
    console.log(JSON.stringify(row));
    return row;
  }

  console.log(`[bench] ${DEFERRED} emails accepted in ${acceptedS.toFixed(1)} s, all deferred after ${settledS.toFixed(1)} s (${last} counted)`);
  const rows = [
    await reads('all providers', ''),
    await reads('provider=google', '?provider=google'),
    await reads(`project=${projects[0]!.slug}`, `?project=${projects[0]!.slug}`),
  ];
  const cli: Array<Record<string, unknown>> = [];
  for (const args of [
    ['queue', 'status'],
    ['queue', 'status', '--json'],
  ]) {
    const wall: number[] = [];
    const c0 = cpu(control);
    for (let i = 0; i < CLI_RUNS; i++) {
      const t = performance.now();
      await stack.cli(...args);
      wall.push(performance.now() - t);
    }
    const row = {
      cli: args.join(' '),
      wall_p50_ms: +pct(wall, 50).toFixed(1),
      wall_max_ms: +Math.max(...wall).toFixed(1),
      control_cpu_ms_per_run: +((cpu(control) - c0) / CLI_RUNS).toFixed(3),
    };
    console.log(JSON.stringify(row));
    cli.push(row);
  }
  const file = writeResult('queue-status', { deferred: DEFERRED, projects: PROJECTS, reads: rows, cli });
  console.log(`[bench] figures in ${file}`);
} finally {
  await stack.stop();
  await dns.close();
}
