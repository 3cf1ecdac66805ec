// Idempotent hand-off to Haraka, by email id. The outbox records 'pending' before
// Haraka writes its queue file and 'queued' once Haraka's callback says the file is
// fsynced. A crash in between leaves 'pending'; recoverPending() (at start, before
// Haraka loads its queue) resolves it from the queue files themselves: a file with
// that id means queued (a retry is a duplicate), no file means never queued (a retry
// sends it). So a retried Enqueue never delivers twice and never loses the mail.
import type { Outbox } from '../control/store/outbox.js';
import type { Logger } from '../core/log.js';

export interface OutgoingMessage {
  emailId: string;
  projectId: string;
  mailFrom: string;
  rcptTo: string[];
  raw: Uint8Array;
  bulk: boolean;
  senderDomain: string;
}

export interface EnqueueOutcome {
  emailId: string;
  duplicate: boolean;
  /** '' when queued (or already queued). */
  error: string;
}

/** Hands one message to Haraka; resolves after Haraka's queued callback. */
export type QueueFn = (msg: OutgoingMessage) => Promise<void>;
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
  if (!msg.raw.length) return 'raw is empty';
  return '';
}

export class Enqueuer {
  /** Enqueues under way, so a concurrent retry of the same id waits for the first. */
  private readonly inflight = new Map<string, Promise<EnqueueOutcome>>();

  constructor(
    private readonly outbox: Outbox,
    private readonly queue: QueueFn,
    private readonly findQueued: FindQueued,
    /** Haraka has loaded its queue dir: a file written before that would be loaded and sent twice. */
    private readonly ready: Promise<void>,
    private readonly log: Logger,
  ) {}

  get busy(): number {
    return this.inflight.size;
  }

  enqueue(msg: OutgoingMessage): Promise<EnqueueOutcome> {
    const running = this.inflight.get(msg.emailId);
    if (running) return running.then((r) => (r.error ? r : { ...r, duplicate: true }));
    const p = this.run(msg).finally(() => this.inflight.delete(msg.emailId));
    if (msg.emailId) this.inflight.set(msg.emailId, p);
    return p;
  }

  private async run(msg: OutgoingMessage): Promise<EnqueueOutcome> {
    const emailId = msg.emailId;
    const error = invalid(msg);
    if (error) return { emailId, duplicate: false, error };
    await this.ready;

    let state = await this.outbox.beginEnqueue(emailId);
    if (state === 'pending') {
      // Not in flight here, so an earlier attempt failed to settle its row: ask the queue.
      if ((await this.findQueued(new Set([emailId]))).has(emailId)) {
        await this.outbox.markEnqueued([emailId]);
        state = 'queued';
      }
    }
    if (state === 'queued') return { emailId, duplicate: true, error: '' };

    try {
      await this.queue(msg);
    } catch (err) {
      // Haraka refused it and removed what it had written: forget the id so a retry sends it.
      await this.outbox.forgetEnqueued([emailId]);
      this.log.warn({ emailId, err: String(err) }, 'Haraka refused a message');
      return { emailId, duplicate: false, error: String((err as Error)?.message ?? err) };
    }
    await this.outbox.markEnqueued([emailId]);
    return { emailId, duplicate: false, error: '' };
  }
}
