// `npm run bench` (or `npm run bench:send`): ingestion throughput of postgate next to a
// hello-world measured in the same run (on a shared machine the ratio is the figure), with the
// server's CPU per request read from /proc beside it.
//
//   hello-world      bare Fastify, one route, logging off, its own process: measured first, last, and
//                    right before each ingestion row (once the mail before it was delivered and the
//                    stack is at rest); each row's ratio is to the mean of the runs on either side of it
//   end to end       emails delivered/s into the receiver (DNS on loopback too), fed by batches
//   POST /v1/emails  accepted emails/s
//   template         POST /v1/emails naming a published template with two variables, beside a plain POST of
//                    the same rendered email measured right before it (BENCH_ONLY=template runs both)
//   SMTP             submission sessions with AUTH and pipelining: accepted emails/s
//   batch            POST /v1/emails/batch, 100 per request: accepted emails/s
//
// Every load generator runs in a process of its own: the HTTP rows the same generator as the
// hello-world (wrk, else autocannon's CLI: bench/lib/http-load.ts), SMTP a Node SMTP client
// (bench/lib/smtp-load-cli.ts), the end-to-end batches bench/lib/api-load.ts; the receiver too
// (bench/lib/receiver.ts). The CPU columns are user + system time from /proc over the
// measurement: control's (the process that answers) per request, and the gateway's, which
// meanwhile delivers what was accepted.
//
// Postgate runs as `npm start` runs it (the supervisor, control + gateway) on a temporary data
// dir and free ports; everything stays on loopback, each measurement is bounded (BENCH_SECONDS,
// 10 s; fixed connection counts, BENCH_CONNECTIONS for the HTTP rows). Prints a table; writes
// bench/results/send-<time>.json.
import { prepare, root } from './lib/prepare.js';

await prepare();

const fs = await import('node:fs');
const path = await import('node:path');
const { execFile } = await import('node:child_process');
const { promisify } = await import('node:util');
const { startHello, stopChild } = await import('./lib/baseline.js');
const { Stack, sleep } = await import('../test/helpers/stack.js');
const { startDnsServer } = await import('../test/helpers/dns-server.js');
const { startReceiver } = await import('./lib/receiver.js');
const { httpGenerator, httpLoad, describeGenerator } = await import('./lib/http-load.js');
const { cpuMs, pssOf, sampleMemory, tree } = await import('./lib/proc.js');
const { memoryOf } = await import('./lib/rss.js');
const { writeResult } = await import('./lib/results.js');
const { recordPerf } = await import('./lib/perf.js');
type HttpRun = import('./lib/http-load.js').HttpRun;

const exec = promisify(execFile);
const SECONDS = Number(process.env.BENCH_SECONDS || 10);
const WARMUP = 1;
/** BENCH_CONNECTIONS: the HTTP rows at another concurrency (1-4,096; the hello-world alike). */
const HTTP_CONNECTIONS = Math.min(4096, Math.max(1, Number(process.env.BENCH_CONNECTIONS) || 32));
const BATCH_CONNECTIONS = 8;
const SMTP_CONNECTIONS = 32;
const E2E_EMAILS = 5000;
const E2E_TIMEOUT_MS = 60_000;
/**
 * Longest wait for the previous measurement's mail to be delivered before the next one starts. A
 * backlog left over is delivered during the next measurement: once it has waited
 * delivery.busyHoldSeconds, dispatch no longer holds back for the burst, and the next figure would
 * measure accepting while delivering (10 s of POST leave 50,000-80,000 emails, 1.5-2.5 min of delivery).
 */
const SETTLE_MS = 180_000;
const BIG = '100000000';
/** How often the stack's CPU is read while waiting for it to be at rest. */
const QUIET_STEP_MS = 500;
/** BENCH_ONLY=post,template,smtp,batch,e2e: run only these measurements (while profiling one path). */
const ONLY = new Set((process.env.BENCH_ONLY || 'e2e,post,template,smtp,batch').split(','));

interface Row {
  name: string;
  perSecond: number;
  p50?: number;
  p99?: number;
  ratio?: number;
  /** CPU µs per request (per email for SMTP and batches) of the answering process: control, or the hello-world. */
  serverUs?: number;
  /** The gateway's CPU µs per request over the same time (delivering in the background). */
  gatewayUs?: number;
  /** Index of the hello-world run just before this row (its ratio is to the mean of that run and the next). */
  anchor?: number;
  note?: string;
}

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;
const gen = httpGenerator();

/** A generator process run to its end: its last stdout line, parsed. */
async function runJson<T>(script: string, options: unknown): Promise<T> {
  const { stdout } = await exec(process.execPath, ['--import', 'tsx', path.join(root, script), JSON.stringify(options)], {
    cwd: root,
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(stdout.trim().split('\n').pop()!) as T;
}

async function hello(): Promise<{ run: HttpRun; cpuUs: number }> {
  const h = await startHello();
  try {
    await httpLoad(gen, { url: `${h.url}/` }, HTTP_CONNECTIONS, WARMUP);
    const c0 = cpuMs([h.proc.pid!]);
    const run = await httpLoad(gen, { url: `${h.url}/` }, HTTP_CONNECTIONS, SECONDS);
    return { run, cpuUs: ((cpuMs([h.proc.pid!]) - c0) * 1000) / run.requests };
  } finally {
    await stopChild(h.proc);
  }
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  // Every hello-world run, in order. On a machine whose pace drifts by a third within minutes, an
  // anchor measured minutes away from a row says little about it; one right before and one right
  // after does.
  const anchors: Array<{ run: HttpRun; cpuUs: number }> = [];
  const anchor = async () => {
    const h = await hello();
    anchors.push(h);
    log(`hello-world: ${round(h.run.rps, 0)} req/s, ${round(h.cpuUs)} µs CPU/req`);
  };

  // 1. The baseline.
  await anchor();

  // 2. Postgate with its peers on loopback.
  const receiver = await startReceiver();
  const dns = await startDnsServer([
    { type: 'MX', name: 'ok.test', exchange: 'mx.ok.test', priority: 10 },
    { type: 'A', name: 'mx.ok.test', address: '127.0.0.1' },
  ]);
  const stack = await Stack.start({
    env: {
      POSTGATE_DNS_SERVERS: dns.address,
      POSTGATE_DELIVERY_PORT: String(receiver.port),
      POSTGATE_LOG_LEVEL: 'warn',
      // BENCH_NODE_ARGS: Node flags for control and the gateway (e.g. --perf-basic-prof for BENCH_PERF), via the supervisor.
      ...(process.env.BENCH_NODE_ARGS ? { POSTGATE_NODE_ARGS: process.env.BENCH_NODE_ARGS } : {}),
      // BENCH_PROFILE=<dir>: CPU profiles of the stack's processes, written when they stop (bench/lib/profile-top.ts reads them).
      ...(process.env.BENCH_PROFILE ? { NODE_OPTIONS: `--require ${path.join(root, 'bench/lib/profile-preload.cjs')}` } : {}),
    },
    // The SMTP rate (300/s by default) is per project and has no plan knob: raised here.
    // BENCH_CONFIG (JSON) adds POSTGATE_CONFIG settings for experiments, e.g. {"storage":{"synchronous":"NORMAL"}}.
    config: { smtpRate: 1_000_000, ...(JSON.parse(process.env.BENCH_CONFIG || '{}') as Record<string, unknown>) },
  });
  const mem = sampleMemory(() => [stack.proc!.pid!]);
  let memory = { idleMb: 0, peakPssMb: 0, idleFilesOnceMb: 0, peakFilesOnceMb: 0 };
  /** Set when mail was not delivered in time: the stack's log is kept for a look. */
  let keepLog = false;
  let planNote = 'plan scale';
  /** Emails postgate said it queued, over the whole run (warm-ups included): what the receiver must get. */
  let accepted = 0;
  /** What the receiver had before this stack sent anything. */
  const base = receiver.count();
  try {
    const project = await stack.createProject('bench', 'Benchmark');
    await stack.cli('plan', 'set', '--project', 'bench', '--plan', 'scale', '--rate', BIG, '--daily-quota', BIG, '--monthly-quota', BIG);
    await stack.cli('domain', 'verify', '--project', 'bench', '--name', 'bench.test', '--force');
    // The gateway paces each receiving provider (a domain of its own for unknown ones like ok.test);
    // the loopback MX is no provider to be gentle with: no rate or connection limit (0 = unlimited).
    await stack.cli('throttle', 'set', '--provider', 'other', '--rate', '0', '--connections', '0');
    planNote += ', throttle other unlimited';
    const idlePids = tree(stack.proc!.pid!);
    const idle = memoryOf(idlePids);
    const idlePss = idlePids.reduce((n, p) => n + pssOf(p), 0);
    const auth = { authorization: `Bearer ${project.keys.live}`, 'content-type': 'application/json' };
    const one = {
      from: 'Bench <bench@bench.test>',
      to: 'r@ok.test',
      subject: 'Benchmark',
      text: 'Hello from the benchmark. This is a short transactional message body.',
    };
    const batchBody = JSON.stringify(Array.from({ length: 100 }, () => one));
    const pids = () => ({ control: stack.pid('control'), gateway: stack.pid('gateway') });
    const cpu = () => {
      const p = pids();
      return { control: cpuMs([p.control]), gateway: cpuMs([p.gateway]), all: cpuMs([stack.proc!.pid!]) };
    };

    // 3. End to end first, while nothing else is queued: accepted → delivered into the receiver.
    if (ONLY.has('e2e')) {
      const before = receiver.count();
      const c0 = cpu();
      const t0 = performance.now();
      const load = runJson<{ queued: number; refused: number; firstRefusal?: string }>('bench/lib/api-load.ts', {
        url: stack.url,
        key: project.keys.live,
        count: E2E_EMAILS,
        batch: 100,
        concurrency: 5,
        email: one,
      });
      const r = await load;
      accepted += r.queued;
      // The rate up to 95% delivered: a few retried stragglers would otherwise decide the figure.
      let t95 = 0;
      try {
        t95 = await receiver.waitFor(before + Math.ceil(0.95 * r.queued), E2E_TIMEOUT_MS);
        await receiver.waitFor(before + r.queued, Math.max(1, E2E_TIMEOUT_MS - (performance.now() - t0)));
      } catch {
        keepLog = true;
      }
      const delivered = receiver.count() - before;
      const secs = (performance.now() - t0) / 1000;
      await sleep(300);
      const c1 = cpu();
      const secs95 = ((t95 || performance.now()) - t0) / 1000;
      rows.push({
        name: 'end to end (delivered)',
        perSecond: t95 ? (0.95 * r.queued) / secs95 : delivered / secs,
        note: `${E2E_EMAILS} sent by batch; 95% delivered in ${round(secs95)} s, ${delivered}/${r.queued} in ${round(secs)} s; stack CPU ${round((c1.all - c0.all) / Math.max(1, delivered), 2)} ms/msg (control ${round((c1.control - c0.control) / Math.max(1, delivered), 2)}, gateway ${round((c1.gateway - c0.gateway) / Math.max(1, delivered), 2)})`,
      });
      log(`end to end: ${delivered} of ${r.queued} in ${round(secs)} s`);
    }

    // 4. Ingestion, each after a short warm-up, each starting once the mail of the one before was delivered
    //    (bounded), so the order of measurements matters less.
    const settle = async () => {
      try {
        await receiver.waitFor(base + accepted, SETTLE_MS);
      } catch {
        log(`backlog of ${base + accepted - receiver.count()} not delivered in ${SETTLE_MS / 1000} s; measuring anyway`);
      }
      // Delivered is not yet at rest: the gateway's reports still reach control. Until the stack spends
      // under 2% of a core (or 10 s passed), the hello-world beside it would share the CPU.
      const t0 = performance.now();
      for (let busy = Number.POSITIVE_INFINITY; busy >= QUIET_STEP_MS * 0.02 && performance.now() - t0 < 10_000; ) {
        const c0 = cpu().all;
        await sleep(QUIET_STEP_MS);
        busy = cpu().all - c0;
      }
      log(`stack at rest after ${round((performance.now() - t0) / 1000)} s`);
    };
    const storeStats = async () => {
      const text = await (await fetch(`${stack.url}/metrics`)).text();
      const value = (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
      return { commits: value('postgate_store_commits_total'), writes: value('postgate_store_writes_total') };
    };
    const measure = async (name: string, run: () => Promise<Omit<Row, 'name' | 'serverUs' | 'gatewayUs'> & { units: number }>) => {
      await settle();
      // The anchor beside the stack at rest: nothing queued, so no delivery slows (or spares) it.
      await anchor();
      const d0 = receiver.count();
      // BENCH_PROFILE with BENCH_PROFILE_SIGNAL: a CPU profile of control and the gateway over this measurement only.
      // BENCH_PERF=<dir>: `perf record -g` of control over this measurement (bench/lib/perf.ts).
      const signalProfile = () => {
        if (process.env.BENCH_PROFILE_SIGNAL) for (const pid of Object.values(pids())) process.kill(pid, 'SIGUSR2');
      };
      signalProfile();
      const stopPerf = recordPerf(name, [pids().control]);
      const s0 = await storeStats();
      const c0 = cpu();
      const { units, ...r } = await run();
      const c1 = cpu();
      signalProfile();
      await stopPerf();
      const s1 = await storeStats();
      // How many writes each group commit carried (control's /metrics): small groups cost a commit each.
      const perCommit = (s1.writes - s0.writes) / Math.max(1, s1.commits - s0.commits);
      const serverUs = ((c1.control - c0.control) * 1000) / Math.max(1, units);
      const gatewayUs = ((c1.gateway - c0.gateway) * 1000) / Math.max(1, units);
      rows.push({
        name,
        ...r,
        serverUs,
        gatewayUs,
        anchor: anchors.length - 1,
        note: [r.note, `background: ${receiver.count() - d0} delivered`, `${round(perCommit)} writes per commit`].filter(Boolean).join('; '),
      });
      log(`${name}: ${round(r.perSecond, 0)}/s, control ${round(serverUs)} µs, gateway ${round(gatewayUs)} µs per request`);
    };
    const httpEmails = async (reqPath: string, body: string, connections: number, perRequest: number) => {
      const req = { url: `${stack.url}${reqPath}`, method: 'POST', headers: auth, body };
      const warm = await httpLoad(gen, req, connections, WARMUP);
      accepted += (warm.requests - warm.non2xx) * perRequest;
      return httpLoad(gen, req, connections, SECONDS);
    };

    // One POST /v1/emails measurement of a body (the plain row and the templated rows).
    const post = (body: unknown) => async () => {
      const r = await httpEmails('/v1/emails', JSON.stringify(body), HTTP_CONNECTIONS, 1);
      const ok = r.requests - r.non2xx;
      accepted += ok;
      return {
        units: r.requests,
        perSecond: ok / r.seconds,
        p50: r.p50,
        p99: r.p99,
        note: r.non2xx || r.errors ? `${r.non2xx} non-2xx, ${r.errors} errors` : undefined,
      };
    };

    if (ONLY.has('post')) await measure('POST /v1/emails', post(one));

    if (ONLY.has('template')) {
      // The template renders to exactly `rendered`: the plain row sends that, the templated row names the template.
      const template = {
        name: 'bench',
        alias: 'bench',
        from: one.from,
        subject: 'Benchmark for {{{NAME}}}',
        html: '<p>Hello {{NAME}}, order {{{ORDER}}} is on its way.</p><p>This is a short transactional message body.</p>',
        text: 'Hello {{{NAME}}}, order {{{ORDER}}} is on its way. This is a short transactional message body.',
        variables: [
          { key: 'NAME', type: 'string' },
          { key: 'ORDER', type: 'number', fallback_value: 0 },
        ],
      };
      const made = await stack.api('POST', '/v1/templates', project.keys.live, template);
      if (made.status !== 201 || (await stack.api('POST', `/v1/templates/${made.body.id}/publish`, project.keys.live)).status !== 200)
        throw new Error(`template not created: ${JSON.stringify(made.body)}`);
      const rendered = {
        from: one.from,
        to: one.to,
        subject: 'Benchmark for Ann',
        html: '<p>Hello Ann, order 42 is on its way.</p><p>This is a short transactional message body.</p>',
        text: 'Hello Ann, order 42 is on its way. This is a short transactional message body.',
      };
      const templated = { to: one.to, template: { id: 'bench', variables: { NAME: 'Ann', ORDER: 42 } } };
      // Alternated (plain, templated, templated, plain), so neither pays alone for what the machine did meanwhile.
      await measure('POST /v1/emails (the rendered email, plain)', post(rendered));
      await measure('POST /v1/emails with template', post(templated));
      await measure('POST /v1/emails with template', post(templated));
      await measure('POST /v1/emails (the rendered email, plain)', post(rendered));
      const [p1, t1, t2, p2] = rows.slice(-4);
      const rate = (100 * (t1!.perSecond + t2!.perSecond)) / (p1!.perSecond + p2!.perSecond);
      const us = (r: Row | undefined) => r?.serverUs ?? 0;
      const cpu = (100 * (us(t1) + us(t2))) / (us(p1) + us(p2));
      t2!.note = [`both templated rows: ${round(rate, 0)}% of the plain rows' rate, ${round(cpu, 0)}% of their CPU per request`, t2!.note]
        .filter(Boolean)
        .join('; ');
    }

    if (ONLY.has('smtp'))
      await measure('SMTP submission (AUTH, pipelining)', async () => {
        const opts = {
          port: Number(stack.env.POSTGATE_SMTP_PORT),
          key: project.keys.live,
          connections: SMTP_CONNECTIONS,
          pipelining: true,
          from: 'bench@bench.test',
          to: 'r@ok.test',
        };
        type R = { accepted: number; refused: number; errors: number; seconds: number; p50: number; p99: number; firstRefusal?: string; firstError?: string };
        accepted += (await runJson<R>('bench/lib/smtp-load-cli.ts', { ...opts, durationMs: WARMUP * 1000 })).accepted;
        const r = await runJson<R>('bench/lib/smtp-load-cli.ts', { ...opts, durationMs: SECONDS * 1000 });
        accepted += r.accepted;
        const problems = [r.refused && `${r.refused} refused (${r.firstRefusal})`, r.errors && `${r.errors} errors (${r.firstError})`]
          .filter(Boolean)
          .join(', ');
        return { units: r.accepted, perSecond: r.accepted / r.seconds, p50: round(r.p50, 2), p99: round(r.p99, 2), note: problems || 'per message' };
      });

    if (ONLY.has('batch'))
      await measure('POST /v1/emails/batch (100)', async () => {
        const r = await httpEmails('/v1/emails/batch', batchBody, BATCH_CONNECTIONS, 100);
        const ok = r.requests - r.non2xx;
        accepted += ok * 100;
        return {
          units: ok * 100,
          perSecond: (ok * 100) / r.seconds,
          p50: r.p50,
          p99: r.p99,
          note: `${round(r.rps, 0)} requests/s; CPU per email${r.non2xx || r.errors ? `; ${r.non2xx} non-2xx, ${r.errors} errors` : ''}`,
        };
      });

    const top = mem.stop();
    const mb = (n: number) => round(n / 2 ** 20, 0);
    memory = { idleMb: mb(idlePss), peakPssMb: mb(top.pss), idleFilesOnceMb: mb(idle.stack), peakFilesOnceMb: mb(top.filesOnce) };
  } finally {
    mem.stop();
    await stack.stop();
    await receiver.close();
    await dns.close();
    // BENCH_KEEP_LOG=1 keeps it in any case (e.g. with BENCH_NODE_ARGS=--trace-deopt).
    if (keepLog || process.env.BENCH_KEEP_LOG) {
      const dir = path.join(root, 'bench/results');
      fs.mkdirSync(dir, { recursive: true });
      const file = path.join(dir, `stack-${new Date().toISOString().replace(/[:.]/g, '-')}.log`);
      fs.copyFileSync(stack.logFile, file);
      log(`${keepLog ? 'some mail was not delivered in time; ' : ''}the stack's log is in ${path.relative(root, file)}`);
    }
    fs.rmSync(stack.dataDir, { recursive: true, force: true });
  }

  // 5. The baseline again, with postgate stopped: the last row's anchor after it.
  await anchor();
  const mean = (list: typeof anchors, f: (h: (typeof anchors)[number]) => number) => list.reduce((n, h) => n + f(h), 0) / list.length;
  const helloRps = mean(anchors, (h) => h.run.rps);
  rows.unshift({
    name: `hello-world (mean of ${anchors.length})`,
    perSecond: helloRps,
    p50: anchors[0]!.run.p50,
    p99: anchors[0]!.run.p99,
    ratio: 1,
    serverUs: mean(anchors, (h) => h.cpuUs),
    note: `runs ${anchors.map((h) => round(h.run.rps, 0)).join(', ')} req/s`,
  });
  // Each ingestion row against the runs on either side of it; the end-to-end row against them all.
  for (const r of rows) {
    if (r.anchor === undefined) {
      r.ratio ??= r.perSecond / helloRps;
      continue;
    }
    const beside = anchors.slice(r.anchor, r.anchor + 2);
    r.ratio = r.perSecond / mean(beside, (h) => h.run.rps);
    r.note = [r.note, `hello-world beside it ${beside.map((h) => round(h.run.rps, 0)).join(' and ')} req/s`].filter(Boolean).join('; ');
  }
  print(rows, memory, planNote);
}

function print(rows: Row[], memory: Record<string, number>, planNote: string): void {
  const header = ['measurement', 'per second', 'p50 ms', 'p99 ms', '× hello', 'CPU µs/req', 'gateway µs/req', 'notes'];
  const opt = (n: number | undefined, d = 1) => (n === undefined ? '' : String(round(n, d)));
  const cells = rows.map((r) => [
    r.name,
    round(r.perSecond, 0).toLocaleString('en'),
    opt(r.p50, 2),
    opt(r.p99, 2),
    round(r.ratio ?? 0, 2).toFixed(2),
    opt(r.serverUs, 0),
    opt(r.gatewayUs, 0),
    r.note ?? '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const last = header.length - 1;
  const line = (c: string[]) => c.map((v, i) => (i === 0 || i === last ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
  console.log('');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const c of cells) console.log(line(c));
  const extra = process.env.BENCH_CONFIG ? `; BENCH_CONFIG ${process.env.BENCH_CONFIG}` : '';
  console.log(`\nload: HTTP ${describeGenerator(gen)}; SMTP and end to end: Node generators, own processes; receiver: own process`);
  console.log(
    'CPU µs/req: user + system time over the measurement, per request (SMTP and batch: per email) — control for postgate, the process itself for the hello-world;',
  );
  console.log('gateway µs/req: what the gateway spent meanwhile, delivering the accepted mail');
  console.log(
    `memory (supervisor + control + gateway): PSS ${memory.idleMb} MB idle, ${memory.peakPssMb} MB peak (own + files once: ${memory.idleFilesOnceMb} / ${memory.peakFilesOnceMb} MB); ${planNote}; ${SECONDS} s per measurement${extra}`,
  );
  const file = writeResult('send', {
    generator: gen,
    seconds: SECONDS,
    ...(process.env.BENCH_CONFIG ? { config: JSON.parse(process.env.BENCH_CONFIG) as unknown } : {}),
    connections: { http: HTTP_CONNECTIONS, batch: BATCH_CONNECTIONS, smtp: SMTP_CONNECTIONS },
    rows: rows.map((r) => ({
      name: r.name,
      perSecond: round(r.perSecond, 0),
      p50: r.p50,
      p99: r.p99,
      ratio: round(r.ratio ?? 0, 3),
      cpuUs: r.serverUs === undefined ? undefined : round(r.serverUs),
      gatewayUs: r.gatewayUs === undefined ? undefined : round(r.gatewayUs),
      note: r.note,
    })),
    memory,
  });
  console.log(`figures written to ${file}`);
}

await main();
process.exit(0);
