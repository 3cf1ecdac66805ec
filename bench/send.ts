// `npm run bench`: ingestion throughput of postgate next to a hello-world
// measured in the same run (the machine is noisy; the ratio is the figure).
//
//   hello-world      bare Fastify, one route, logging off (measured first and last)
//   POST /v1/emails  accepted emails/s
//   batch            POST /v1/emails/batch, 100 per request: accepted emails/s
//   SMTP             submission sessions with pipelining: accepted emails/s
//   end to end       emails delivered/s into a loopback MX (DNS on loopback too)
//
// Postgate runs as `npm start` runs it (the supervisor, control + gateway) on a
// temporary data dir and free ports; everything stays on loopback, each
// measurement is bounded (~10 s, fixed connection counts). Accepted mail is
// dispatched and delivered in the background while later measurements run, as
// in production; the table says how much was. Prints a table and a JSON line.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHello, stopChild } from './lib/baseline.js';
import autocannon, { type Result } from 'autocannon';
import { Stack, sleep } from '../test/helpers/stack.js';
import { startDnsServer } from '../test/helpers/dns-server.js';
import { startCountingSink } from './lib/sink.js';
import { smtpLoad } from './lib/smtp-load.js';
import { memoryOf, peakMemory, tree, type Memory } from './lib/rss.js';
import { build } from '../deploy/build.js';

// Postgate runs as `npm start` runs it, from the compiled tree: built now, so it matches the sources.
build();

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SECONDS = Number(process.env.BENCH_SECONDS || 10);
const WARMUP = 1;
const HTTP_CONNECTIONS = 32;
const BATCH_CONNECTIONS = 8;
const SMTP_CONNECTIONS = 32;
const E2E_EMAILS = 5000;
const E2E_TIMEOUT_MS = 60_000;
/** Longest wait for the previous measurement's mail to be delivered before the next one starts. */
const SETTLE_MS = 30_000;
const BIG = '100000000';

interface Row {
  name: string;
  perSecond: number;
  p50?: number;
  p99?: number;
  ratio?: number;
  note?: string;
}

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);
/** Emails postgate said it queued, over the whole run (warm-ups included): what the sink must receive. */
let accepted = 0;

/** An autocannon run that also counts the emails the answers say were queued. */
async function cannon(
  url: string,
  req: { method?: string; path?: string; headers?: Record<string, string>; body?: string },
  connections: number,
  seconds: number,
) {
  let queued = 0;
  const result: Result = await autocannon({
    url,
    connections,
    duration: seconds,
    requests: [
      {
        ...req,
        onResponse: (status, body) => {
          if (status !== 202) return;
          const n = body.split('"status":"queued"').length - 1;
          queued += n;
          accepted += n;
        },
      },
    ],
  });
  return { result, queued };
}

const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;
const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : 0);

async function dispatched(stack: Stack): Promise<number> {
  const text = await (await fetch(`${stack.url}/metrics`)).text();
  return Number(/^postgate_emails_dispatched_total (\d+)/m.exec(text)?.[1] ?? 0);
}

async function main(): Promise<void> {
  const rows: Row[] = [];

  // 1. The baseline.
  const hello = await startHello();
  await cannon(hello.url, { path: '/' }, HTTP_CONNECTIONS, WARMUP);
  const h1 = (await cannon(hello.url, { path: '/' }, HTTP_CONNECTIONS, SECONDS)).result;
  await stopChild(hello.proc);
  log(`hello-world: ${round(h1.requests.average, 0)} req/s`);

  // 2. Postgate with its peers on loopback.
  const sink = await startCountingSink();
  const dns = await startDnsServer([
    { type: 'MX', name: 'ok.test', exchange: 'mx.ok.test', priority: 10 },
    { type: 'A', name: 'mx.ok.test', address: '127.0.0.1' },
  ]);
  const stack = await Stack.start({
    env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port) },
    // The SMTP rate (300/s by default) is per project and has no plan knob: raised here.
    // BENCH_CONFIG (JSON) adds POSTGATE_CONFIG settings for experiments, e.g. {"storage":{"synchronous":"NORMAL"}}.
    config: { smtpRate: 1_000_000, ...(JSON.parse(process.env.BENCH_CONFIG || '{}') as Record<string, unknown>) },
  });
  const peak = peakMemory(() => stack.proc!.pid!);
  let rss = { idleMb: 0, peakMb: 0, idleRssSumMb: 0, peakRssSumMb: 0 };
  /** Set when mail was not delivered in time: the stack's log is kept for a look. */
  let keepLog = false;
  let planNote = 'plan scale';
  try {
    const project = await stack.createProject('bench', 'Benchmark');
    try {
      await stack.cli('plan', 'set', '--project', 'bench', '--plan', 'scale', '--rate', BIG, '--daily-quota', BIG, '--monthly-quota', BIG);
    } catch (err) {
      planNote = 'plan set unavailable: default limits';
      log(`plan set failed, continuing with the default plan: ${(err as Error).message.split('\n')[0]}`);
    }
    await stack.cli('domain', 'verify', '--project', 'bench', '--name', 'bench.test', '--force');
    // The gateway paces each receiving provider (a domain of its own for unknown ones like ok.test);
    // the loopback MX is no provider to be gentle with: no rate or connection limit (0 = unlimited).
    try {
      await stack.cli('throttle', 'set', '--provider', 'other', '--rate', '0', '--connections', '0');
      planNote += ', throttle other unlimited';
    } catch (err) {
      planNote += ', throttle set unavailable';
      log(`throttle set failed, delivery keeps the default pacing: ${(err as Error).message.split('\n')[0]}`);
    }
    const idle: Memory = memoryOf(tree(stack.proc!.pid!));
    const auth = { authorization: `Bearer ${project.keys.live}`, 'content-type': 'application/json' };
    const one = {
      from: 'Bench <bench@bench.test>',
      to: 'r@ok.test',
      subject: 'Benchmark',
      text: 'Hello from the benchmark. This is a short transactional message body.',
    };
    const batchBody = JSON.stringify(Array.from({ length: 100 }, () => one));

    // 3. End to end first, while nothing else is queued: accepted → delivered into the sink.
    {
      const before = sink.count();
      const t0 = performance.now();
      let queued = 0;
      for (let i = 0; i < E2E_EMAILS / 100; i += 5) {
        const answers = await Promise.all(
          Array.from({ length: Math.min(5, E2E_EMAILS / 100 - i) }, () =>
            fetch(`${stack.url}/v1/emails/batch`, { method: 'POST', headers: auth, body: batchBody }).then((r) => r.text()),
          ),
        );
        for (const a of answers) queued += a.split('"status":"queued"').length - 1;
      }
      accepted += queued;
      // The rate up to 95% delivered: a few retried stragglers would otherwise decide the figure.
      const until = t0 + E2E_TIMEOUT_MS;
      let t95 = 0;
      while (sink.count() - before < queued && performance.now() < until) {
        if (!t95 && sink.count() - before >= 0.95 * queued) t95 = performance.now();
        await sleep(50);
      }
      const delivered = sink.count() - before;
      const secs = (performance.now() - t0) / 1000;
      const secs95 = ((t95 || performance.now()) - t0) / 1000;
      const perSecond = t95 ? (0.95 * queued) / secs95 : delivered / secs;
      rows.push({
        name: 'end to end (delivered)',
        perSecond,
        note: `${E2E_EMAILS} sent by batch; 95% delivered in ${round(secs95)} s, ${delivered}/${queued} in ${round(secs)} s`,
      });
      log(`end to end: ${delivered} of ${queued} in ${round(secs)} s`);
      if (delivered < queued) keepLog = true;
    }

    // 4. Ingestion, each after a short warm-up, each starting once the mail of the one before was delivered
    //    (bounded), so the order of measurements matters less.
    const settle = async () => {
      const until = performance.now() + SETTLE_MS;
      while (sink.count() < accepted && performance.now() < until) await sleep(200);
      if (sink.count() < accepted) log(`backlog of ${accepted - sink.count()} not delivered in ${SETTLE_MS / 1000} s; measuring anyway`);
    };
    const measure = async (name: string, run: () => Promise<Omit<Row, 'name' | 'note'> & { note?: string }>) => {
      await settle();
      const [d0, s0] = [await dispatched(stack), sink.count()];
      const r = await run();
      const [d1, s1] = [await dispatched(stack), sink.count()];
      rows.push({ name, ...r, note: [r.note, `background: ${d1 - d0} dispatched, ${s1 - s0} delivered`].filter(Boolean).join('; ') });
      log(`${name}: ${round(r.perSecond, 0)}/s`);
    };

    await measure('POST /v1/emails', async () => {
      await cannon(stack.url, { method: 'POST', path: '/v1/emails', headers: auth, body: JSON.stringify(one) }, HTTP_CONNECTIONS, WARMUP);
      const { result, queued } = await cannon(
        stack.url,
        { method: 'POST', path: '/v1/emails', headers: auth, body: JSON.stringify(one) },
        HTTP_CONNECTIONS,
        SECONDS,
      );
      return {
        perSecond: queued / result.duration,
        p50: result.latency.p50,
        p99: result.latency.p99,
        note: result.non2xx ? `${result.non2xx} non-2xx` : undefined,
      };
    });

    await measure('SMTP submission', async () => {
      const opts = {
        port: Number(stack.env.POSTGATE_SMTP_PORT),
        key: project.keys.live,
        connections: SMTP_CONNECTIONS,
        from: 'bench@bench.test',
        to: 'r@ok.test',
      };
      accepted += (await smtpLoad({ ...opts, durationMs: WARMUP * 1000 })).accepted;
      const r = await smtpLoad({ ...opts, durationMs: SECONDS * 1000 });
      accepted += r.accepted;
      const sorted = r.latencies.sort((a, b) => a - b);
      const problems = [r.refused && `${r.refused} refused (${r.firstRefusal})`, r.errors && `${r.errors} errors`].filter(Boolean).join(', ');
      return { perSecond: r.accepted / r.seconds, p50: round(percentile(sorted, 50), 2), p99: round(percentile(sorted, 99), 2), note: problems || undefined };
    });

    await measure('POST /v1/emails/batch (100)', async () => {
      await cannon(stack.url, { method: 'POST', path: '/v1/emails/batch', headers: auth, body: batchBody }, BATCH_CONNECTIONS, WARMUP);
      const { result, queued } = await cannon(
        stack.url,
        { method: 'POST', path: '/v1/emails/batch', headers: auth, body: batchBody },
        BATCH_CONNECTIONS,
        SECONDS,
      );
      return {
        perSecond: queued / result.duration,
        p50: result.latency.p50,
        p99: result.latency.p99,
        note: `${round(result.requests.average, 0)} requests/s${result.non2xx ? `, ${result.non2xx} non-2xx` : ''}`,
      };
    });

    const top = peak.stop();
    const mb = (n: number) => round(n / 2 ** 20, 0);
    rss = { idleMb: mb(idle.stack), peakMb: mb(top.stack), idleRssSumMb: mb(idle.rssSum), peakRssSumMb: mb(top.rssSum) };
  } finally {
    peak.stop();
    await stack.stop();
    await sink.close();
    await dns.close();
    if (keepLog) {
      const dir = path.join(root, 'bench/results');
      fs.mkdirSync(dir, { recursive: true });
      const file = path.join(dir, `stack-${new Date().toISOString().replace(/[:.]/g, '-')}.log`);
      fs.copyFileSync(stack.logFile, file);
      log(`some mail was not delivered in time; the stack's log is in ${path.relative(root, file)}`);
    }
    fs.rmSync(stack.dataDir, { recursive: true, force: true });
  }

  // 5. The baseline again, with postgate stopped: the machine may have changed pace meanwhile.
  const hello2 = await startHello();
  await cannon(hello2.url, { path: '/' }, HTTP_CONNECTIONS, WARMUP);
  const h2 = (await cannon(hello2.url, { path: '/' }, HTTP_CONNECTIONS, SECONDS)).result;
  await stopChild(hello2.proc);
  const helloRps = (h1.requests.average + h2.requests.average) / 2;
  rows.unshift({
    name: 'hello-world (mean of 2)',
    perSecond: helloRps,
    p50: h1.latency.p50,
    p99: h1.latency.p99,
    ratio: 1,
    note: `first ${round(h1.requests.average, 0)}, last ${round(h2.requests.average, 0)} req/s`,
  });
  for (const r of rows) r.ratio ??= r.perSecond / helloRps;
  print(rows, rss, planNote);
}

function print(rows: Row[], rss: { idleMb: number; peakMb: number; idleRssSumMb: number; peakRssSumMb: number }, planNote: string): void {
  const header = ['measurement', 'per second', 'p50 ms', 'p99 ms', '× hello', 'notes'];
  const cells = rows.map((r) => [
    r.name,
    round(r.perSecond, 0).toLocaleString('en'),
    r.p50 === undefined ? '' : String(r.p50),
    r.p99 === undefined ? '' : String(r.p99),
    round(r.ratio ?? 0, 2).toFixed(2),
    r.note ?? '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((v, i) => (i === 0 || i === 5 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
  console.log('');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const c of cells) console.log(line(c));
  const extra = process.env.BENCH_CONFIG ? `; BENCH_CONFIG ${process.env.BENCH_CONFIG}` : '';
  console.log(
    `\nmemory (supervisor + control + gateway, shared files counted once): ${rss.idleMb} MB idle, ${rss.peakMb} MB peak (RSS sum ${rss.idleRssSumMb} / ${rss.peakRssSumMb} MB); ${planNote}; ${SECONDS} s per measurement${extra}`,
  );
  const json = {
    bench: 'send',
    seconds: SECONDS,
    ...(process.env.BENCH_CONFIG ? { config: JSON.parse(process.env.BENCH_CONFIG) as unknown } : {}),
    connections: { http: HTTP_CONNECTIONS, batch: BATCH_CONNECTIONS, smtp: SMTP_CONNECTIONS },
    rows: rows.map((r) => ({ name: r.name, per_second: round(r.perSecond, 0), p50_ms: r.p50, p99_ms: r.p99, ratio: round(r.ratio ?? 0, 3), note: r.note })),
    rss_mb: rss,
  };
  console.log(JSON.stringify(json));
}

await main();
