// Idempotent hand-off to Haraka, by email id. The outbox records 'pending' before
// Haraka writes its queue file and 'queued' once Haraka's callback says the file is
// fsynced. A crash in between leaves 'pending'; recoverPending() (at start, before
// Haraka loads its queue) resolves it from the queue files themselves: a file with
// that id means queued (a retry is a duplicate), no file means never queued (a retry
// sends it). So a retried Enqueue never delivers twice and never loses the mail.
// Ids here are keys: the email id, or email_id/n for one recipient's copy of a bulk email.
import fsp from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { Outbox } from './outbox/outbox.js';
import type { Logger } from '../core/log.js';
import { Signer, type DkimKey } from './dkim.js';
import { buildMime, buildMimeStream, type AttachmentData, type MessageParts } from './mime.js';
import { builtFile, queueStream, Slots, writeBuilt } from './spool.js';

export interface OutgoingMessage {
  emailId: string;
  projectId: string;
  mailFrom: string;
  rcptTo: string[];
  /** The message; empty when `compose` says how to build it. */
  raw: Uint8Array;
  compose?: MessageParts;
  /** The bytes of compose.attachments, by ref (shared by the copies of one Enqueue). */
  attachmentData?: AttachmentData;
  bulk: boolean;
  senderDomain: string;
  /** Idempotency key; the email id when empty. */
  key?: string;
  /** Signed with this key before it is queued; unsigned when absent. */
  dkim?: DkimKey;
  /** Day 1 of the project's warm-up (epoch ms); 0 = today. */
  warmupStartMs?: bigint | number;
  /** When control accepted the email (epoch ms); 0 = unknown (an older control). */
  acceptedMs?: bigint | number;
  /** The sender domain's `tls: "enforced"`: delivered only over verified TLS (gateway/tls). */
  requireTls?: boolean;
}

export interface EnqueueOutcome {
  emailId: string;
  key: string;
  duplicate: boolean;
  /** '' when queued (or already queued). */
  error: string;
}

export const keyOf = (msg: Pick<OutgoingMessage, 'emailId' | 'key'>): string => msg.key || msg.emailId;

/**
 * Hands one (signed) message to Haraka: `raw`, or `stream` when given (a message with attachments,
 * already in DATA form: spool.ts). Resolves with Haraka's answer after its queued callback.
 */
export type QueueFn = (msg: OutgoingMessage & { key: string; stream?: Readable }) => Promise<string | undefined>;

/** Where messages with attachments are built. */
export interface EnqueueDirs {
  build: string;
}

/** Messages with attachments built and queued at once: each is disk work. */
const BUILDS_AT_ONCE = 2;
/** Which of these ids have a file in Haraka's queue. */
export type FindQueued = (ids: ReadonlySet<string>) => Promise<Set<string>>;

export async function recoverPending(outbox: Outbox, findQueued: FindQueued, log: Logger): Promise<void> {
  const pending = await outbox.pendingEnqueues();
  if (!pending.length) return;
  const queued = await findQueued(new Set(pending));
  const lost = pending.filter((id) => !queued.has(id));
  await outbox.markEnqueued([...queued]);
  await outbox.forgetEnqueued(lost);
  log.warn({ queued: queued.size, notQueued: lost.length }, 'resolved enqueues interrupted by a crash');
}

function invalid(msg: OutgoingMessage): string {
  if (!msg.emailId) return 'email_id is required';
  if (!msg.rcptTo.length) return 'rcpt_to is empty';
  if (!msg.raw.length && !msg.compose?.from) return 'raw is empty and there is nothing to compose';
  return '';
}

/** Messages handed to Haraka per turn: a few are cheap (signing runs on its own thread). */
const PER_TURN = 4;

/**
 * Hands out turns of the event loop, PER_TURN at a time. Signing and Haraka's parsing of a
 * message are CPU work; a batch of Enqueue would otherwise do all of it in one stretch
 * and stall every SMTP session under way meanwhile.
 */
class Turns {
  private readonly waiting: Array<() => void> = [];
  private scheduled = false;

  next(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || !this.waiting.length) return;
    this.scheduled = true;
    // A setImmediate queued now runs after the next I/O poll.
    setImmediate(() => {
      this.scheduled = false;
      for (let i = 0; i < PER_TURN && this.waiting.length; i++) this.waiting.shift()!();
      this.schedule();
    });
  }
}

export class Enqueuer {
  /** Enqueues under way, so a concurrent retry of the same id waits for the first. */
  private readonly inflight = new Map<string, Promise<EnqueueOutcome>>();
  private readonly turns = new Turns();
  private readonly signer = new Signer();
  private readonly builds = new Slots(BUILDS_AT_ONCE);

  constructor(
    private readonly outbox: Outbox,
    private readonly queue: QueueFn,
    private readonly findQueued: FindQueued,
    /** Haraka has loaded its queue dir: a file written before that would be loaded and sent twice. */
    private readonly ready: Promise<void>,
    private readonly log: Logger,
    private readonly dirs: EnqueueDirs,
  ) {}

  get busy(): number {
    return this.inflight.size;
  }

  enqueue(msg: OutgoingMessage): Promise<EnqueueOutcome> {
    const key = keyOf(msg);
    const running = this.inflight.get(key);
    if (running) return running.then((r) => (r.error ? r : { ...r, duplicate: true }));
    const p = this.run(msg, key).finally(() => this.inflight.delete(key));
    if (key) this.inflight.set(key, p);
    return p;
  }

  private async run(msg: OutgoingMessage, key: string): Promise<EnqueueOutcome> {
    const { emailId } = msg;
    const error = invalid(msg);
    if (error) return { emailId, key, duplicate: false, error };
    await this.ready;

    let state = await this.outbox.beginEnqueue(key);
    if (state === 'pending') {
      // Not in flight here, so an earlier attempt failed to settle its row: ask the queue.
      if ((await this.findQueued(new Set([key]))).has(key)) {
        await this.outbox.markEnqueued([key]);
        state = 'queued';
      }
    }
    if (state === 'queued') return { emailId, key, duplicate: true, error: '' };

    try {
      await this.turns.next();
      if (!msg.raw.length && msg.compose?.attachments?.length) {
        await this.queueBuilt(msg, key);
      } else {
        const built = msg.raw.length ? Buffer.from(msg.raw) : await buildMime(msg.emailId, msg.compose!);
        const raw = msg.dkim?.privateKeyPem ? await this.signer.sign(built, msg.dkim) : built;
        await this.queue({ ...msg, raw, key });
      }
    } catch (err) {
      // Not signed, or Haraka refused it (and removed what it had written): forget the key so a retry sends it.
      await this.outbox.forgetEnqueued([key]);
      this.log.warn({ emailId, key, err: String((err as Error)?.message ?? err) }, 'message not queued');
      return { emailId, key, duplicate: false, error: String((err as Error)?.message ?? err) };
    }
    await this.outbox.markEnqueued([key]);
    return { emailId, key, duplicate: false, error: '' };
  }

  /**
   * A message with attachments, through files instead of memory (spool.ts): built into the build
   * dir, signed from there, copied into its queue file (queue-file.ts). What one holds in memory is a few chunks.
   */
  private async queueBuilt(msg: OutgoingMessage, key: string): Promise<void> {
    const release = await this.builds.take();
    const file = builtFile(this.dirs.build, key);
    try {
      await writeBuilt(file, buildMimeStream(msg.emailId, msg.compose!, msg.attachmentData));
      const signature = msg.dkim?.privateKeyPem ? await this.signer.signFile(file, msg.dkim) : Buffer.alloc(0);
      await this.queue({ ...msg, raw: signature, key, stream: queueStream(signature, file) });
    } finally {
      release();
      await fsp.rm(file, { force: true });
    }
  }
}
