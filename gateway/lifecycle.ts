// Starts the gateway's side of the control contract inside Haraka (called from the
// postgate_rpc plugin at init_master): settles enqueues a crash interrupted, then
// serves gRPC. Stops it again at shutdown, after in-flight deliveries drain.
import fsp from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Readable } from 'node:stream';
import Notes from 'haraka-notes';
import { Enqueuer, recoverPending, type QueueFn } from './enqueue.js';
import { queueFiles, queuedEmailIds, removeFinished } from './queue-scan.js';
import { dataForm, keepsHeaders, queueFile } from './queue-file.js';
import { installQueueMemory } from './queue-memory.js';
import type { HarakaOutbound } from './haraka.js';
import { startRpc } from './grpc-server.js';
import { gatewayRuntime } from './runtime.js';
import { clearDirs, sweep } from './spool.js';
import { type HarakaQueueModule, type HMailClass, trackHarakaQueue } from './state/haraka-queue.js';

/** How long a queued id stays known, so a late retry of its Enqueue is still a duplicate. */
const IDEMPOTENCY_WINDOW_MS = 7 * 24 * 3600_000;
/** How long a finished queue file stays recorded (Outbox.appendEvents' `finished`). */
const FINISHED_KEPT_MS = 60_000;
/**
 * Longest waits at shutdown for unary calls, then for SMTP sessions under way (a cut
 * session is re-sent at restart). Together under the supervisor's 15 s before SIGKILL.
 */
const RPC_GRACE_MS = 3_000;
/** Haraka's spool_after (haraka-dir.ts). */
const SPOOL_AFTER = 1024 * 1024;
const DRAIN_MS = 8_000;
/**
 * Message bytes kept in memory between queueing and DATA (queue-memory.ts): a few hundred messages
 * under way; past it, a message is read from its file as Haraka always did.
 */
const QUEUE_MEMORY_BYTES = 4 * 1024 * 1024;

/** outbound.send_email, promisified, with the queue item's notes (a haraka-notes object): for a whole message only. */
export type SendEmail = (msg: Omit<Parameters<QueueFn>[0], 'stream'> & { notes: object }) => Promise<string>;

export interface GatewayServiceOptions {
  outbound: HarakaOutbound;
  /** For what queue-file.ts does not write itself. */
  sendEmail: SendEmail;
  /** Resolves once Haraka has loaded its queue dir. */
  queueLoaded: Promise<void>;
  /** Haraka's outbound/queue module: the live state counts the files it loads at start (gateway/state/haraka-queue.ts). */
  queueModule?: HarakaQueueModule;
}

export interface GatewayServiceHandle {
  /** Stops gRPC, waits for deliveries under way, closes the outbox. */
  shutdown(): Promise<void>;
}

/** What a queue item carries for our hooks (todo.notes, haraka.ts PostgateNotes). */
function queueNotes(msg: Parameters<QueueFn>[0]): object {
  return new Notes({
    skip_plugins: [],
    email_id: msg.emailId,
    project_id: msg.projectId,
    bulk: msg.bulk,
    sender_domain: msg.senderDomain,
    enqueue_key: msg.key,
    warmup_start: Number(msg.warmupStartMs ?? 0),
    accepted_ms: Number(msg.acceptedMs ?? 0),
    // Only when set: a queue file of mail that does not require TLS stays as it was.
    ...(msg.requireTls ? { require_tls: true } : {}),
  });
}

export async function startGatewayService(opts: GatewayServiceOptions): Promise<GatewayServiceHandle> {
  const rt = await gatewayRuntime();
  const { outbox, log, paths } = rt;
  // Before Haraka loads its queue: every item it holds is counted from the start.
  trackHarakaQueue(
    opts.outbound,
    rt.queueState,
    log,
    opts.queueModule && { queue: opts.queueModule, HMailItem: opts.outbound.HMailItem as unknown as HMailClass },
  );
  const findQueued = (ids: ReadonlySet<string>) => queuedEmailIds(paths.queueDir, ids);

  // Haraka has not loaded its queue yet, so the files seen here are exactly what it will send.
  await recoverPending(outbox, findQueued, log);
  await removeFinished(outbox, paths.queueDir, log);
  // Half-built messages and spool files of a crashed run: their queue files (if any) hold the messages.
  await clearDirs(paths.buildDir, paths.spoolDir);
  const pruneIds = () =>
    Promise.all([
      outbox.pruneEnqueued(Date.now() - IDEMPOTENCY_WINDOW_MS).catch((err) => log.error({ err }, 'pruning enqueued ids failed')),
      // What a failed queueing left in Haraka's spool dir (a queued message's file is removed at once).
      sweep(paths.spoolDir, 3600_000).catch((err) => log.error({ err }, 'sweeping the spool dir failed')),
    ]);
  await pruneIds();
  const pruneTimer = setInterval(pruneIds, 3600_000).unref();
  // Haraka deletes a finished file within milliseconds of its record: a minute-old record names no
  // file any more. Forgotten every minute, so the table holds about a minute of deliveries.
  const pruneFinished = () => outbox.pruneFinished(Date.now() - FINISHED_KEPT_MS).catch((err) => log.error({ err }, 'pruning finished files failed'));
  const finishedTimer = setInterval(pruneFinished, FINISHED_KEPT_MS).unref();

  // A whole message whose headers Haraka would keep is written as its queue file at once (queue-file.ts).
  const memory = installQueueMemory(opts.outbound.HMailItem.prototype, QUEUE_MEMORY_BYTES);
  const queue: QueueFn = async (msg) => {
    const notes = queueNotes(msg);
    const whole = (data: string | Buffer | Readable) =>
      queueFile(opts.outbound, paths.queueDir, { mailFrom: msg.mailFrom, rcptTo: msg.rcptTo, data, notes }, memory);
    if (msg.stream) return whole(msg.stream);
    const data = dataForm(Buffer.from(msg.raw.buffer, msg.raw.byteOffset, msg.raw.byteLength));
    if (keepsHeaders(data)) return whole(data);
    const answer = await opts.sendEmail({ ...msg, notes });
    // send_email spools a message past spool_after (haraka-dir.ts) to a file it leaves behind, named by the
    // transaction in its answer ("Message Queued (<uuid>)"); the queue file has the message. Haraka adds a
    // few headers of its own, so one a little below the limit may have spooled too.
    const uuid = /\(([\w.-]+)\)\s*$/.exec(answer)?.[1];
    if (uuid && msg.raw.length > SPOOL_AFTER / 2) await fsp.rm(path.join(paths.spoolDir, `${uuid}.eml`), { force: true });
    return answer;
  };
  const enqueuer = new Enqueuer(outbox, queue, findQueued, opts.queueLoaded, log, { build: paths.buildDir });
  const rpc = await startRpc(rt, enqueuer, async () => (await queueFiles(paths.queueDir)).length);
  void opts.queueLoaded.then(() => log.info({ grpc: `127.0.0.1:${rpc.port}`, lastSeq: rt.feed.lastSeq }, 'gateway ready'));

  return {
    async shutdown() {
      clearInterval(pruneTimer);
      clearInterval(finishedTimer);
      await rpc.shutdown(RPC_GRACE_MS);
      const until = Date.now() + DRAIN_MS;
      while (rt.attempts.size && Date.now() < until) await sleep(100);
      if (rt.attempts.size) log.warn({ attempts: rt.attempts.size }, 'stopping with deliveries under way; they are retried at start');
      // Idle connections say QUIT rather than vanish.
      if (rt.connections) {
        log.info(rt.connections.stats(), 'outbound connections: opened, reused, idle at stop');
        rt.connections.close();
      }
      if (rt.pipelining) log.info(rt.pipelining, 'outbound sessions: envelopes pipelined, commands that did not match (connection closed)');
      await rt.flushUsage();
      outbox.close();
      log.info('gateway stopped');
    },
  };
}
