// `npm run bench:deliverability` (or `node --import tsx bench/deliverability.ts`): end-to-end
// relaying, in one run and alternating rounds, of
//
//   postgate (SMTP)      `npm start` (supervisor, control, gateway) fed over SMTP submission from a
//                        trusted network (config smtpTrusted: loopback, no AUTH, as Postfix's
//                        mynetworks): the pipeline, the group commit, gRPC to the gateway, MIME
//                        building, DKIM (RSA-2048, the domain's key from POST /v1/domains), pacing
//                        (limits set high enough not to bind), Haraka's queue, delivery, and every
//                        event back to control.
//   postgate (API)       the same stack fed by POST /v1/emails/batch (100 per request).
//   Postfix + OpenDKIM   Debian's packages as a self-hoster sets them up (bench/deliverability/postfix.ts):
//                        smtpd, queue on disk, OpenDKIM milter signing with an RSA-2048 key,
//                        relayhost = the receiver. Installed with apt-get when running as root.
//   vanilla Haraka       Haraka as shipped configured as a relay (queue on disk, its own outbound),
//                        no DKIM.
//
// Every contender relays the same message (bench/deliverability/message.txt) to the same receiver
// over loopback, which runs in a process of its own (Postfix's smtp-sink, else a Node sink) and
// counts what it receives. The SMTP-fed contenders get the same load generator in a process of its
// own: Postfix's smtp-source (BENCH_SMTP_SESSIONS sessions, one message after another on each,
// no pipelining), else a Node process speaking SMTP the same way (bench/lib/smtp-load-cli.ts). The
// API is fed by a separate Node process (bench/lib/api-load.ts). The output names each.
//
// For each contender and round: delivered msgs/s (from the start of the load until the receiver
// has every message), CPU ms per delivered message summed over every process of the contender
// (user + system from /proc, reaped children included: Postfix's master and each daemon, OpenDKIM;
// Haraka; postgate's supervisor, control and gateway), and memory at load: each process's own memory
// plus each mapped file once (the headline and its target), and PSS summed over the same processes
// (bench/lib/proc.ts), which splits shared pages with the benchmark's own Node processes.
// Rounds alternate (the order rotates each round); the median round is reported. Then where
// postgate's CPU goes: by process, and by stage (accept, build, sign, deliver).
//
// Bounded: BENCH_MESSAGES (3000) per round, BENCH_ROUNDS (3), 180 s per delivery wait; loopback
// only. BENCH_BODY_BYTES (e.g. 20000) gives every contender a longer body than the receipt line.
// BENCH_TLS=1: the receiver offers STARTTLS and every contender relays over opportunistic TLS.
// BENCH_MX_CONNECTIONS (20): postgate's and Postfix's limit of concurrent deliveries to the receiver.
// Figures go to bench/results/deliverability-<time>.json. BENCH_PROFILE=<dir> writes CPU
// profiles of postgate's processes when they stop; BENCH_PERF=<dir> records every contender's
// processes with `perf record -g` over each measured round (bench/lib/perf.ts).
import { prepare, root } from './lib/prepare.js';

await prepare();

const { spawn } = await import('node:child_process');
const fs = await import('node:fs');
const os = await import('node:os');
const path = await import('node:path');
const readline = await import('node:readline');
const { Stack, sleep } = await import('../test/helpers/stack.js');
const { startDnsServer } = await import('../test/helpers/dns-server.js');
const { freePort } = await import('../test/helpers/ports.js');
const { publishDomain } = await import('../test/e2e/deliverability/helpers.js');
const { startVanillaHaraka } = await import('./deliverability/lib.js');
const { ensurePostfix, startPostfix, SMTP_SOURCE } = await import('./deliverability/postfix.js');
const { startReceiver } = await import('./lib/receiver.js');
const { trackCpu, commOf, sampleMemory, tree } = await import('./lib/proc.js');
const { recordPerf } = await import('./lib/perf.js');
const { writeResult } = await import('./lib/results.js');
const { stageCosts } = await import('./deliverability/stages.js');
type TreeMemory = import('./lib/proc.js').TreeMemory;

const N = Number(process.env.BENCH_MESSAGES || 3000);
/** BENCH_CONTENDERS=smtp,api,postfix,haraka: only the contenders whose name contains one of these (case-insensitive; trying a change). */
const ONLY = (process.env.BENCH_CONTENDERS || '').toLowerCase().split(',').filter(Boolean);
const wanted = (name: string) => !ONLY.length || ONLY.some((w) => name.toLowerCase().includes(w));
const ROUNDS = Number(process.env.BENCH_ROUNDS || 3);
const SMTP_SESSIONS = Number(process.env.BENCH_SMTP_SESSIONS || 32);
const API_CONNECTIONS = Number(process.env.BENCH_API_CONNECTIONS || 8);
const BATCH = 100;
/**
 * Concurrent deliveries to the loopback MX, the same for postgate (its `other` throttle) and Postfix
 * (default_destination_concurrency_limit): 20, Postfix's shipped default. Vanilla Haraka has no limit
 * below its concurrency_max. (Until 2026-11-26 postgate had 500 here and Postfix 20: with STARTTLS,
 * where Postfix makes a handshake per message, that difference alone was worth 40% of Postfix's rate.)
 */
const MX_CONNECTIONS = Number(process.env.BENCH_MX_CONNECTIONS || 20);
const TIMEOUT_MS = 180_000;
/** After the last message arrives: the events reach control, the queues settle. The same for every contender. */
const SETTLE_MS = 500;
const WARMUP = 300;
const DOMAIN = 'bench.test';
const FROM = 'hello@acme.test';
const TO = `r@${DOMAIN}`;
const SHORT_BODY = 'Hello from the benchmark. This is a short transactional message body, about as long as a receipt notice.';
/**
 * BENCH_BODY_BYTES: every contender relays a body of about this size instead (the receipt line,
 * then plain text lines), as real mail is larger than a receipt line: what grows with the size
 * (storing, building, signing, queueing, relaying) then counts as it does in use.
 */
const BODY_BYTES = Number(process.env.BENCH_BODY_BYTES || 0);
/**
 * BENCH_TLS=1: the receiver offers STARTTLS, as every large mailbox provider's MX does, and each
 * contender relays with its shipped opportunistic TLS (postgate and Haraka: enable_tls; Postfix:
 * smtp_tls_security_level = may). The receiver is then the Node sink, as smtp-sink has no TLS.
 */
const TLS = process.env.BENCH_TLS === '1';
function bodyOf(bytes: number): string {
  const lines = [SHORT_BODY];
  let size = SHORT_BODY.length;
  for (let i = 1; size < bytes; i++) {
    const line = `Line ${i} of the benchmark's longer body: the order, the items, the totals and the small print.`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n');
}
const BODY = BODY_BYTES > SHORT_BODY.length ? bodyOf(BODY_BYTES) : SHORT_BODY;
/** Targets of issue 16 for postgate against Postfix + OpenDKIM. */
const TARGET = { cpuRatio: 1, rateRatio: 1.5, memoryMb: 200 };

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const MB = 2 ** 20;

/** What a generator run reports: when sending began (performance.now() of this process) and what was refused. */
interface Fed {
  startedAt: number;
  refused: number;
  note?: string;
}

interface Contender {
  name: string;
  /** The load generator and how it talks. */
  feed: string;
  roots(): number[];
  /** A name for each process in the CPU breakdown. */
  nameOf(pid: number): string;
  send(n: number): Promise<Fed>;
}

interface Round {
  perSecond: number;
  seconds: number;
  delivered: number;
  cpuMsPerMessage: number;
  /** CPU ms per delivered message by process name. */
  cpuByProcess: Record<string, number>;
  memory: TreeMemory;
  refused: number;
  note?: string;
}

// The one message every SMTP-fed contender relays; the API sends the same fields.
const baseMessage = fs.readFileSync(path.join(root, 'bench/deliverability/message.txt'), 'utf8');
const SUBJECT = /^Subject: (.*)$/m.exec(baseMessage)![1]!;
if (!baseMessage.includes(SHORT_BODY)) throw new Error('bench/deliverability/message.txt must carry SHORT_BODY');
/** message.txt, or its headers with the longer body (BENCH_BODY_BYTES) in a file of the run's own. */
const messageFile =
  BODY === SHORT_BODY
    ? path.join(root, 'bench/deliverability/message.txt')
    : path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-bench-msg-')), 'message.txt');
if (BODY !== SHORT_BODY) fs.writeFileSync(messageFile, baseMessage.replace(SHORT_BODY, BODY));

/** Runs a generator process to its end; resolves when it exits, with the time sending began. */
function generator(cmd: string, args: string[], what: string): Promise<Fed & { stdout: string }> {
  return new Promise((resolve, reject) => {
    const spawnedAt = performance.now();
    const proc = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let startedAt = spawnedAt;
    let stdout = '';
    let stderr = '';
    // A Node generator says when its connections are open and sending begins (its start-up is not the contender's time).
    readline.createInterface({ input: proc.stdout! }).on('line', (l) => {
      const m = /^start (\d+)$/.exec(l);
      if (m) startedAt = performance.now() - (Date.now() - Number(m[1]));
      else stdout += `${l}\n`;
    });
    proc.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
    proc.once('error', reject);
    proc.once('close', (code) => {
      if (code !== 0) reject(new Error(`${what} exited ${code}: ${stderr || stdout}`));
      else resolve({ startedAt, refused: 0, stdout });
    });
  });
}

/** SMTP load on a port: smtp-source when installed, else the Node generator with the same behaviour. */
function smtpFeed(port: () => number): { feed: string; send: (n: number) => Promise<Fed> } {
  if (fs.existsSync(SMTP_SOURCE)) {
    return {
      feed: `smtp-source -s ${SMTP_SESSIONS} -d (Postfix's generator, own process; no AUTH, no pipelining)`,
      send: async (n) => {
        const args = [
          '-d',
          '-s',
          String(SMTP_SESSIONS),
          '-m',
          String(n),
          '-F',
          messageFile,
          '-f',
          FROM,
          '-t',
          TO,
          '-M',
          'client.bench.test',
          `127.0.0.1:${port()}`,
        ];
        const r = await generator(SMTP_SOURCE, args, 'smtp-source');
        return { startedAt: r.startedAt, refused: 0 };
      },
    };
  }
  return {
    feed: `Node SMTP generator, ${SMTP_SESSIONS} sessions (own process; no AUTH, no pipelining)`,
    send: async (n) => {
      const o = { port: port(), connections: SMTP_SESSIONS, count: n, pipelining: false, from: FROM, to: TO, messageFile };
      const r = await generator(process.execPath, ['--import', 'tsx', path.join(root, 'bench/lib/smtp-load-cli.ts'), JSON.stringify(o)], 'SMTP generator');
      const res = JSON.parse(r.stdout.trim().split('\n').pop()!) as { refused: number; errors: number; firstRefusal?: string; firstError?: string };
      if (res.errors) throw new Error(`SMTP generator: ${res.errors} sessions failed (${res.firstError})`);
      return { startedAt: r.startedAt, refused: res.refused, note: res.firstRefusal };
    },
  };
}

async function main(): Promise<void> {
  // Installed before the receiver and any contender's feed are chosen: smtp-sink and smtp-source come
  // with it, and the figures of a first run must be those of the next (on a machine without Postfix,
  // the receiver was the Node sink in the run that installed it, smtp-sink in every run after; and
  // postgate's feed was once chosen before the install, the Node generator against smtp-source).
  const postfixMissing = wanted('Postfix + OpenDKIM') ? ensurePostfix() : 'not among BENCH_CONTENDERS';
  const receiver = await startReceiver('smtp-sink', { starttls: TLS });
  log(`receiver: ${receiver.kind} on 127.0.0.1:${receiver.port} (pid ${receiver.pid})`);
  const dns = await startDnsServer([
    { type: 'MX', name: DOMAIN, exchange: `mx.${DOMAIN}`, priority: 10 },
    { type: 'A', name: `mx.${DOMAIN}`, address: '127.0.0.1' },
  ]);
  const closers: Array<() => Promise<unknown>> = [() => receiver.close(), () => dns.close()];
  // The longer body's message file, also when the run fails.
  if (BODY !== SHORT_BODY) closers.push(async () => fs.rmSync(path.dirname(messageFile), { recursive: true, force: true }));
  const contenders: Contender[] = [];
  try {
    // postgate, as `npm start` runs it.
    const stack = await Stack.start({
      env: {
        POSTGATE_DNS_SERVERS: dns.address,
        POSTGATE_DELIVERY_PORT: String(receiver.port),
        POSTGATE_SENDING_IPS: '127.0.0.1',
        POSTGATE_LOG_LEVEL: process.env.BENCH_LOG_LEVEL || 'warn',
        // BENCH_NODE_ARGS: Node flags for control and the gateway (e.g. heap limits), via the supervisor.
        ...(process.env.BENCH_NODE_ARGS ? { POSTGATE_NODE_ARGS: process.env.BENCH_NODE_ARGS } : {}),
        // BENCH_PROFILE=<dir>: CPU profiles of the stack's processes, written when they stop.
        ...(process.env.BENCH_PROFILE ? { NODE_OPTIONS: `--require ${path.join(root, 'bench/lib/profile-preload.cjs')}` } : {}),
      },
      // BENCH_CONFIG (JSON) adds POSTGATE_CONFIG settings for experiments, e.g. {"delivery":{"busyDispatchRate":0}} (merged into delivery).
      config: (() => {
        const extra = JSON.parse(process.env.BENCH_CONFIG || '{}') as { delivery?: Record<string, unknown> } & Record<string, unknown>;
        const delivery = { retryDelays: [5], maxTempFailures: 5, connectTimeout: 10, concurrency: 1000, ...extra.delivery };
        return { smtpRate: 1_000_000, ...extra, delivery };
      })(),
    });
    closers.unshift(() => stack.stop());
    const project = await stack.createProject('bench', 'Benchmark');
    await stack.setPlan('bench', 'scale', { daily_quota: 100_000_000, monthly_quota: 100_000_000, rate: 100_000 });
    // A real sender domain: its DKIM key signs every message; its SPF/DMARC are in the DNS.
    await publishDomain(stack, project.keys.live, dns, 'acme.test');
    // Pacing stays on: every message is classified and counted, and admitted by the rate and
    // connection limits of its provider; the limits are set where a loopback MX needs them.
    await stack.admin('POST', '/admin/v1/throttles/other', { daily_norm: 100_000_000, rate_per_minute: 10_000_000, connections: MX_CONNECTIONS });
    // SMTP submission from loopback without AUTH (as smtp-source speaks): a trusted network mapped
    // to the project's key. The key exists only now, so the stack restarts with it.
    const configFile = stack.env.POSTGATE_CONFIG!;
    const config = JSON.parse(fs.readFileSync(configFile, 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(configFile, JSON.stringify({ ...config, smtpTrusted: { key: project.keys.live, networks: ['127.0.0.1/32'] } }));
    await stack.stop();
    await stack.boot();
    const postgateName = (pid: number) =>
      pid === stack.proc!.pid ? 'supervisor' : pid === stack.pid('control') ? 'control' : pid === stack.pid('gateway') ? 'gateway' : commOf(pid);
    const smtpToPostgate = smtpFeed(() => Number(stack.env.POSTGATE_SMTP_PORT));
    contenders.push({
      name: 'postgate (SMTP)',
      feed: smtpToPostgate.feed,
      roots: () => [stack.proc!.pid!],
      nameOf: postgateName,
      send: smtpToPostgate.send,
    });
    contenders.push({
      name: 'postgate (API)',
      feed: `Node HTTP generator, POST /v1/emails/batch of ${BATCH}, ${API_CONNECTIONS} in flight (own process)`,
      roots: () => [stack.proc!.pid!],
      nameOf: postgateName,
      send: async (n) => {
        const o = {
          url: stack.url,
          key: project.keys.live,
          count: n,
          batch: BATCH,
          concurrency: API_CONNECTIONS,
          email: { from: `Acme <${FROM}>`, to: TO, subject: SUBJECT, text: BODY },
        };
        const r = await generator(process.execPath, ['--import', 'tsx', path.join(root, 'bench/lib/api-load.ts'), JSON.stringify(o)], 'API generator');
        const res = JSON.parse(r.stdout.trim().split('\n').pop()!) as { refused: number; firstRefusal?: string };
        return { startedAt: r.startedAt, refused: res.refused, note: res.firstRefusal };
      },
    });

    // Postfix + OpenDKIM (installed above).
    if (postfixMissing) log(`Postfix + OpenDKIM skipped: ${postfixMissing}`);
    else {
      const postfix = await startPostfix({
        listenPort: await freePort(),
        milterPort: await freePort(),
        relayPort: receiver.port,
        domain: 'acme.test',
        tls: TLS,
        connections: MX_CONNECTIONS,
      });
      closers.unshift(() => postfix.close());
      const feed = smtpFeed(() => postfix.port);
      contenders.push({ name: 'Postfix + OpenDKIM', feed: feed.feed, roots: () => postfix.pids(), nameOf: commOf, send: feed.send });
    }

    // Vanilla Haraka.
    if (wanted('vanilla Haraka (no DKIM)')) {
      const vanilla = await startVanillaHaraka(root, await freePort(), DOMAIN, receiver.port, 1000, dns.address);
      closers.unshift(() => vanilla.close());
      const feed = smtpFeed(() => vanilla.port);
      contenders.push({ name: 'vanilla Haraka (no DKIM)', feed: feed.feed, roots: () => [vanilla.proc.pid!], nameOf: () => 'haraka', send: feed.send });
    }
    for (let i = contenders.length - 1; i >= 0; i--) if (!wanted(contenders[i]!.name)) contenders.splice(i, 1);

    let measured = 0;
    const runOnce = async (c: Contender, n: number, warmup = false): Promise<Round> => {
      const before = receiver.count();
      // BENCH_PERF=<dir>: `perf record -g` of every process of the contender over each measured round (bench/lib/perf.ts).
      const stopPerf = warmup ? async () => {} : recordPerf(`${c.name} ${++measured}`, c.roots().flatMap(tree));
      const cpu = trackCpu(() => c.roots(), c.nameOf);
      // BENCH_MEMORY_MS: how often own memory is sampled (200 ms; smaps-based figures once a second).
      const mem = sampleMemory(() => c.roots(), Number(process.env.BENCH_MEMORY_MS || 200), c.nameOf);
      let fed: Fed;
      let done: number;
      let note: string | undefined;
      try {
        fed = await c.send(n);
        done = await receiver.waitFor(before + n - fed.refused, TIMEOUT_MS);
      } catch (err) {
        mem.stop();
        cpu.stop();
        await stopPerf();
        throw new Error(`${c.name}: ${(err as Error).message}`);
      }
      await sleep(SETTLE_MS);
      await stopPerf();
      const { total, byName } = cpu.stop();
      const memory = mem.stop();
      const delivered = receiver.count() - before;
      if (fed.refused) note = `${fed.refused} refused: ${fed.note ?? ''}`;
      const seconds = (done - fed.startedAt) / 1000;
      return {
        perSecond: delivered / seconds,
        seconds,
        delivered,
        cpuMsPerMessage: total / delivered,
        cpuByProcess: Object.fromEntries([...byName].map(([k, v]) => [k, v / delivered])),
        memory,
        refused: fed.refused,
        note,
      };
    };

    // Warm every contender up (JIT, connections, first-day pacing state, Postfix's daemons), then alternate.
    for (const c of contenders) {
      log(`warming up ${c.name}: ${c.feed}`);
      await runOnce(c, WARMUP, true);
    }
    const results = new Map<Contender, Round[]>(contenders.map((c) => [c, []]));
    for (let r = 0; r < ROUNDS; r++) {
      for (let i = 0; i < contenders.length; i++) {
        const c = contenders[(i + r) % contenders.length]!;
        const x = await runOnce(c, N);
        results.get(c)!.push(x);
        log(
          `round ${r + 1}: ${c.name} ${round(x.perSecond)} msgs/s, ${round(x.cpuMsPerMessage, 2)} CPU ms/msg, ${round(x.memory.filesOnce / MB)} MB own + files once (PSS ${round(x.memory.pss / MB)})${x.note ? ` (${x.note})` : ''}`,
        );
      }
    }

    const { buildMs, signMs } = await stageCosts(BODY);
    report(contenders, results, receiver.kind, { buildMs, signMs });
  } finally {
    for (const close of closers) await close().catch((err: Error) => log(`closing: ${err.message}`));
  }
  if (postfixMissing) log(`note: Postfix + OpenDKIM was not measured (${postfixMissing})`);
}

function report(contenders: Contender[], results: Map<Contender, Round[]>, receiverKind: string, stage: { buildMs: number; signMs: number }): void {
  interface Summary {
    name: string;
    feed: string;
    perSecond: number;
    cpuMsPerMessage: number;
    pssMb: number;
    filesOnceMb: number;
    rssSumMb: number;
    rounds: number[];
    cpuByProcess: Record<string, number>;
    /** Peak PSS MB by process name (the round with the highest total). */
    pssByProcess: Record<string, number>;
    notes: string[];
  }
  const summaries: Summary[] = contenders.map((c) => {
    const rs = results.get(c)!;
    const mid = [...rs].sort((a, b) => a.perSecond - b.perSecond)[Math.floor(rs.length / 2)]!;
    return {
      name: c.name,
      feed: c.feed,
      perSecond: median(rs.map((r) => r.perSecond)),
      cpuMsPerMessage: median(rs.map((r) => r.cpuMsPerMessage)),
      pssMb: Math.max(...rs.map((r) => r.memory.pss)) / MB,
      filesOnceMb: Math.max(...rs.map((r) => r.memory.filesOnce)) / MB,
      rssSumMb: Math.max(...rs.map((r) => r.memory.rssSum)) / MB,
      rounds: rs.map((r) => round(r.perSecond)),
      cpuByProcess: mid.cpuByProcess,
      pssByProcess: Object.fromEntries(Object.entries([...rs].sort((a, b) => b.memory.pss - a.memory.pss)[0]!.memory.byName).map(([k, v]) => [k, v / MB])),
      notes: rs.map((r) => r.note).filter((n): n is string => !!n),
    };
  });
  const lines: string[] = [
    '',
    `Deliverability: ${N} messages per round (body ${Buffer.byteLength(BODY)} bytes), ${ROUNDS} alternating rounds (median shown), receiver ${receiverKind} (own process), all on loopback; postgate and Postfix deliver over at most ${MX_CONNECTIONS} connections at once`,
    '',
    '| contender | fed by | msgs/s (rounds) | CPU ms/msg | memory at load: own + files once (PSS) |',
    '|---|---|---|---|---|',
    ...summaries.map(
      (s) =>
        `| ${s.name} | ${s.feed} | ${round(s.perSecond)} (${s.rounds.join(', ')}) | ${round(s.cpuMsPerMessage, 2)} | ${round(s.filesOnceMb)} MB (${round(s.pssMb)} MB) |`,
    ),
    '',
    'CPU: user + system of every process of the contender, reaped children included, per delivered message.',
    "Memory: peak while loaded, each process's own memory plus each file the processes map counted once: what the",
    'stack needs of a machine by itself. In brackets PSS summed over the processes, which splits a shared page between',
    "every process that maps it, the benchmark's own Node processes too: it flatters a Node stack by up to 20 MB.",
  ];
  const peer = summaries.find((s) => s.name.startsWith('Postfix'));
  const targets: Record<string, unknown> = {};
  if (peer) {
    lines.push('', `postgate against Postfix + OpenDKIM (targets: CPU ≤ ${TARGET.cpuRatio}×, msgs/s ≥ ${TARGET.rateRatio}×, memory ≤ ${TARGET.memoryMb} MB):`);
    for (const s of summaries.filter((x) => x.name.startsWith('postgate'))) {
      const cpu = s.cpuMsPerMessage / peer.cpuMsPerMessage;
      const rate = s.perSecond / peer.perSecond;
      const ok = (b: boolean) => (b ? 'met' : 'NOT met');
      targets[s.name] = { cpuRatio: round(cpu, 2), rateRatio: round(rate, 2), memoryMb: round(s.filesOnceMb) };
      lines.push(
        `  ${s.name}: CPU ${round(cpu, 2)}× (${ok(cpu <= TARGET.cpuRatio)}), msgs/s ${round(rate, 2)}× (${ok(rate >= TARGET.rateRatio)}), memory ${round(s.filesOnceMb)} MB own + files once (${ok(s.filesOnceMb <= TARGET.memoryMb)})`,
      );
    }
  }
  lines.push('', 'CPU ms per delivered message by process (median round):');
  for (const s of summaries) {
    const parts = Object.entries(s.cpuByProcess)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${round(v, 2)}`);
    lines.push(`  ${s.name}: ${parts.join(', ')}`);
  }
  lines.push('', 'Peak PSS MB by process (each process at its own peak, so these may add up to more than the total):');
  for (const s of summaries) {
    const parts = Object.entries(s.pssByProcess)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${round(v)}`);
    lines.push(`  ${s.name}: ${parts.join(', ')}`);
  }
  const stages: Record<string, Record<string, number>> = {};
  lines.push('', 'postgate by stage, CPU ms per message (build and sign measured alone in this process):');
  for (const s of summaries.filter((x) => x.name.startsWith('postgate'))) {
    const control = s.cpuByProcess.control ?? 0;
    const gateway = s.cpuByProcess.gateway ?? 0;
    stages[s.name] = {
      accept: round(control, 2),
      build: round(stage.buildMs, 2),
      sign: round(stage.signMs, 2),
      deliver: round(Math.max(0, gateway - stage.buildMs - stage.signMs), 2),
    };
    const st = stages[s.name]!;
    lines.push(
      `  ${s.name}: accept ${st.accept} (control: ${s.name.includes('SMTP') ? 'SMTP session, parsing' : 'HTTP, validation'}, group commit, dispatch over gRPC, events back)`,
      `      build ${st.build} (gateway: nodemailer MIME) · sign ${st.sign} (DKIM RSA-2048, gateway/dkim-relaxed.cjs) · deliver ${st.deliver} (gateway: Haraka queue + SMTP out, pacing, outbox events)`,
    );
  }
  for (const s of summaries) if (s.notes.length) lines.push(`note, ${s.name}: ${s.notes[0]}`);
  lines.push('');
  process.stdout.write(lines.join('\n'));
  const file = writeResult('deliverability', {
    messages: N,
    bodyBytes: Buffer.byteLength(BODY),
    rounds: ROUNDS,
    smtpSessions: SMTP_SESSIONS,
    apiConnections: API_CONNECTIONS,
    mxConnections: MX_CONNECTIONS,
    receiver: receiverKind,
    tls: TLS,
    contenders: summaries.map((s) => ({
      ...s,
      perSecond: round(s.perSecond),
      cpuMsPerMessage: round(s.cpuMsPerMessage, 3),
      pssMb: round(s.pssMb),
      filesOnceMb: round(s.filesOnceMb),
      rssSumMb: round(s.rssSumMb),
      cpuByProcess: Object.fromEntries(Object.entries(s.cpuByProcess).map(([k, v]) => [k, round(v, 3)])),
      pssByProcess: Object.fromEntries(Object.entries(s.pssByProcess).map(([k, v]) => [k, round(v)])),
    })),
    targets,
    stages,
  });
  process.stdout.write(`figures written to ${file}\n`);
}

await main();
process.exit(0);
