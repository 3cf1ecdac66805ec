// `npm start`: runs control and the gateway as two child processes, restarts
// one that dies (logged, with backoff) and, on SIGTERM or SIGINT, drains and
// stops both. Each child's pid is kept in <data>/run/ for operators and tests.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../core/config.js';
import { createLineLogger } from '../core/log-line.js';
import { securedDataDir } from '../core/data-dir.js';
import { WalCheckpointer } from '../core/sqlite/checkpointer.js';
import { controlDbFile, gatewayOutboxFile } from '../core/data-files.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// Run from dist/ (`npm start`, compiled by deploy/build.ts) the children are JavaScript too;
// run from the sources, they go through the tsx loader.
const ext = path.extname(fileURLToPath(import.meta.url));
const loader = ext === '.ts' ? ['--import', 'tsx'] : [];
/** The package's directory: relative settings (./data) mean the same from either tree. */
const packageDir = ext === '.ts' ? root : path.dirname(root);
let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (err) {
  // A misconfiguration is one clear line and a non-zero exit, not a stack trace.
  console.error(`postgate: ${(err as Error).message}`);
  process.exit(1);
}
const log = createLineLogger('supervisor', config.logLevel);
const tightened = securedDataDir(config.dataDir);
if (tightened) log.warn({ dataDir: config.dataDir, paths: tightened }, 'data dir was readable by others; removed group and other access');
const runDir = path.join(config.dataDir, 'run');
fs.mkdirSync(runDir, { recursive: true });

interface Child {
  name: 'control' | 'gateway';
  entry: string;
  /** Signal that makes the child drain and stop (Haraka drains on SIGINT). */
  stopSignal: NodeJS.Signals;
  proc?: ChildProcess;
  startedAt: number;
  backoffMs: number;
  timer?: NodeJS.Timeout;
  /** Scheduling priority (nice value) of the child. */
  nice: number;
  /** V8 flags of this child, after V8_FLAGS (a later flag wins). */
  v8Flags: string[];
  /** Times started (a child that never ran is told apart from one that ran, then died). */
  starts?: number;
}

/**
 * A child's exit code for "this configuration cannot start" (EX_CONFIG, e.g. a database that cannot
 * be opened): the child printed why; restarting it would only print it again.
 */
const EX_CONFIG = 78;

// V8 flags of both children. Left alone, V8 lets garbage pile up to several times the live heap
// before a full collection (gateway peak 245 MB); a fixed growth step bounds that. The step is
// 100%: the old generation may grow to twice what the last full collection left. It was 10%, then
// 30%, and both made full collections frequent (every ~150 ms in control under 20 kB batches, ~220
// ms in the gateway), which costs twice:
// - the collections themselves: V8's helper thread (concurrent marking, sweeping) took about a
//   quarter of each process's CPU at 10% (perf, BENCH_PERF);
// - the compiler: V8 holds a function's optimized code weakly, so the code of closures made per
//   call (nodemailer's replace callbacks, fs's completion wrappers, Haraka's per-connection
//   handlers) is dropped whenever no such closure is alive at a full collection, and optimized
//   again once hot. At 30% the gateway's compiler thread took 14% of the stack's CPU in a first
//   round of 3,000 messages and ~7% in every round after (--trace-opt: ~400 optimizations a round,
//   1.5 s of compiling, almost no deoptimizations).
// Alternating runs of bench:deliverability, 30% → 100%, CPU ms per delivered message, msgs/s and
// the stack's peak: 20 kB via SMTP 5.32/5.20 → 4.30/4.32 ms, 288/289 → 334/332 msgs/s, 209/212 →
// 246/242 MB; 20 kB via the API 4.46/4.42 → 3.28/3.53 ms, 358/353 → 436/414 msgs/s, 211/229 →
// 248/238 MB; receipts via SMTP 4.95/4.5 → 4.29/4.08 ms, via the API 4.2/3.95 → 3.04/3.74 ms, 30-40
// MB more. 60% sat between (20 kB API 4.87/5.08 → 4.59/3.93 ms, 212/217 → 219/239 MB). Postfix +
// OpenDKIM spent 4.4-5.7 ms per 20 kB message those hours: at 30% postgate spent as much CPU, at
// 100% about 0.75 of it; the memory target (200 MB for the stack) was missed at both. Where memory
// is shorter than CPU, POSTGATE_NODE_ARGS=--heap-growing-percent=30 takes the old trade.
// Earlier, 10% → 30% at 20 kB: SMTP-fed 10.44/10.55 → 9.01/9.94 ms, API 8.98/9.12 → 8.79/8.06.
// --single-threaded-gc changed nothing at 20 kB but the memory (up to +25 MB).
//
// One V8 helper thread (default 4) is enough for heaps this small and spares the others' memory and
// CPU: peak 271 → 262 MB, batch sends 0.71 → 0.78x hello-world. Under load the young generation
// fills to its limit in both processes; at a quarter of V8's default (2×4 MB instead of 2×16) the
// stack's peak is 12–17 MB lower. With the malloc settings below it costs nothing measurable per
// delivered message (bench:deliverability, alternating runs: SMTP 5.6/5.35 → 4.86/4.61 ms, API
// 3.62/3.44 → 3.58/4.11 ms); batch sends spend 10–20% more of control's CPU per email (bench:send),
// still ≥ 0.75x the hello-world. Tried and left out: MALLOC_ARENA_MAX=2 (~8 MB, but SMTP submission
// halved), --optimize-for-size (1.6x the CPU per message).
const V8_FLAGS = ['--heap-growing-percent=100', '--v8-pool-size=1', '--max-semi-space-size=4'];
/**
 * The gateway's growth step is 50%: its heap is what grows most under load (31 MB of its own idle,
 * 76-80 at peak with 100%), and its CPU per message is the stack's least pressing figure. In
 * alternating bench:deliverability runs the stack's peak went 200-206 → 190-196 MB at receipts and the
 * gateway's 76-78 → 68-69 MB at 20 kB, its CPU per message within the spread
 * (docs/performance-log.md, twelfth session). Both processes at 50% had cost 15-30% more CPU at
 * 20 kB, mostly control's, whose acceptance (bench:send) is its figure: control keeps 100%.
 */
const GATEWAY_V8_FLAGS = ['--heap-growing-percent=50'];

/**
 * glibc's allocator raises its mmap threshold each time a large block is freed, and with it how
 * much free memory it keeps at the top of its heap (twice the threshold, up to 64 MB). Fixed
 * settings bound that: blocks of 1 MB and more are mapped from the kernel, and at most 2 MB
 * stays free at the top of the heap. The threshold was 128 kB before; then every block of a
 * batch's body, a gRPC Enqueue (protobuf-es doubles one buffer as it encodes) or a built message
 * was fresh pages from the kernel, which on a virtual machine cost more than the work on them:
 * an Enqueue of 50 emails of 20 kB took 501 µs of CPU per email to encode, 58 now
 * (bench/proto-encode.ts). Measured in alternating runs of bench:deliverability (receipts):
 * SMTP 209/184 → 278/308 msgs/s and 6.55/7.1 → 5.1/4.66 CPU ms per message, API 302/233 →
 * 464/409 msgs/s and 4.17/5.46 → 2.96/3.51 ms, for about 10 MB more at peak (which the smaller
 * young generation above gives back). A 1 MB threshold with glibc's 128 kB trim threshold gave
 * the heap back and took it again at every turn: SMTP submission then cost more than before. An
 * operator's own settings win.
 */
const MALLOC_ENV = { MALLOC_MMAP_THRESHOLD_: '1048576', MALLOC_TRIM_THRESHOLD_: '2097152' };

// POSTGATE_ROLE picks the children: both (one machine), or control or gateway alone (several nodes).
const children: Child[] = [
  // Accepting mail is what callers wait on; delivery is background work that catches up. On a busy
  // machine the gateway gets what CPU control leaves (a higher nice value), not an equal share.
  {
    name: 'gateway' as const,
    entry: `gateway/main${ext}`,
    stopSignal: 'SIGINT' as const,
    startedAt: 0,
    backoffMs: 250,
    nice: config.role === 'both' ? 10 : 0,
    v8Flags: GATEWAY_V8_FLAGS,
  },
  { name: 'control' as const, entry: `control/main${ext}`, stopSignal: 'SIGTERM' as const, startedAt: 0, backoffMs: 250, nice: 0, v8Flags: [] },
].filter((c) => config.role === 'both' || c.name === config.role);
let stopping = false;

// The SQLite files this node's children write (none of control's with PostgreSQL), checkpointed
// here, off their event loops; the children are told so and checkpoint themselves only past a longer WAL.
const sqliteFiles = [
  ...(config.role !== 'gateway' && !config.databaseUrl ? [controlDbFile(config.dataDir)] : []),
  ...(config.role !== 'control' ? [gatewayOutboxFile(config.dataDir)] : []),
];
const checkpointer =
  config.storage.walCheckpointer !== false && sqliteFiles.length
    ? new WalCheckpointer(sqliteFiles, {
        onError: (file, err) => log.warn({ file, err: err.message }, 'checkpointing failed; the child checkpoints its own WAL meanwhile'),
        onCheckpoint: (file, frames, copied) => log.debug({ file, frames, copied }, 'checkpointed'),
      })
    : undefined;
const checkpointEnv: Record<string, string> = checkpointer ? { POSTGATE_WAL_CHECKPOINTER: '1' } : {};

function start(c: Child): void {
  c.startedAt = Date.now();
  c.starts = (c.starts ?? 0) + 1;
  // detached: a Ctrl-C in the terminal reaches the supervisor only, which then stops the children in order.
  // POSTGATE_NODE_ARGS: extra Node flags for the children (e.g. --cpu-prof, --max-old-space-size=…).
  const extra = (process.env.POSTGATE_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const argv = [process.execPath, ...V8_FLAGS, ...c.v8Flags, ...extra, ...loader, path.join(root, c.entry)];
  // Through nice(1), so every thread of the child (thread pool, DKIM worker, GC) runs at its priority; it execs in place (same pid).
  const [cmd, ...args] = c.nice ? ['nice', '-n', String(c.nice), ...argv] : argv;
  const proc = spawn(cmd!, args, { cwd: packageDir, env: { ...MALLOC_ENV, ...process.env, ...checkpointEnv }, stdio: 'inherit', detached: true });
  c.proc = proc;
  fs.writeFileSync(path.join(runDir, `${c.name}.pid`), String(proc.pid));
  log.info({ child: c.name, childPid: proc.pid }, 'started');
  proc.on('exit', (code, signal) => {
    c.proc = undefined;
    if (stopping) return;
    // At the first start it is the operator's to fix: the node stops. Later (it ran, then died) it is an outage
    // of what it depends on, such as the database: restarted with backoff like any other exit.
    if (code === EX_CONFIG && c.starts === 1) {
      log.error({ child: c.name, code }, `${c.name} cannot start with this configuration (its line above says why); stopping`);
      void shutdown('configuration', 1);
      return;
    }
    // A child that ran a while gets a quick restart; one that keeps dying backs off.
    c.backoffMs = Date.now() - c.startedAt > 30_000 ? 250 : Math.min(c.backoffMs * 2, 10_000);
    log.error({ child: c.name, code, signal, restartInMs: c.backoffMs }, 'child exited; restarting');
    c.timer = setTimeout(() => start(c), c.backoffMs);
  });
}

function stopChild(c: Child): Promise<void> {
  clearTimeout(c.timer);
  const proc = c.proc;
  if (!proc) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => {
      log.warn({ child: c.name }, 'did not stop in time; killing');
      proc.kill('SIGKILL');
    }, 15_000);
    proc.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    proc.kill(c.stopSignal);
  });
}

async function shutdown(signal: string, exitCode = 0): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'stopping');
  // Control first: it stops taking mail and commits what it accepted; then the gateway drains.
  for (const c of [...children].reverse()) await stopChild(c);
  for (const c of children) fs.rmSync(path.join(runDir, `${c.name}.pid`), { force: true });
  checkpointer?.stop();
  log.info('stopped');
  process.exit(exitCode);
}

process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
for (const c of children) start(c);
checkpointer?.start();
