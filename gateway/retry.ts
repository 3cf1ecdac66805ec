// Automatic retries of `rejected` recipients (a policy or reputation 5xx, or a 4xx that
// outlasted Haraka's temp-fail schedule). Haraka bounces every 5xx and deletes the
// queue item, so we take the mail back: the same signed bytes are queued again for the
// refused recipients, carrying when they are due (not_before, enforced by the pacing
// plugin), how many such retries were made and how many attempts came before. The new
// file is on disk before Haraka deletes the old one, so a crash loses neither.
import Notes from 'haraka-notes';
import type { HarakaOutbound, HMailItem } from './haraka.js';
import { queueFile } from './queue-file.js';

/** Seconds before retry n (1-based), or undefined once the retries are used up. */
export function rejectRetryDelay(delays: readonly number[], n: number): number | undefined {
  return n >= 1 && n <= delays.length ? delays[n - 1] : undefined;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks);
}

/** The Received line Haraka put on top at queueing; a requeue would add another. */
const OUR_RECEIVED = /^Received: \(postgate\);[^\n]*\n/;

/**
 * Queues the message again for `rcpts`, due at notBeforeMs (our clock); its attempts
 * are numbered on from lastAttempt. Resolves once the new queue file is on disk (Haraka has it);
 * rejects when it could not be queued.
 */
export async function requeueRejected(
  outbound: HarakaOutbound,
  queueDir: string,
  hmail: HMailItem,
  rcpts: string[],
  notBeforeMs: number,
  lastAttempt: number,
): Promise<void> {
  // The stored message is in DATA form (dot-stuffed) and goes into the new file as it is, byte for byte:
  // send_email would stuff its dot lines a second time (and decode it as UTF-8), which breaks the body and DKIM.
  const data = (await readAll(hmail.data_stream())).toString('latin1').replace(OUR_RECEIVED, '');
  const notes = new Notes({
    ...hmail.todo.notes,
    skip_plugins: [],
    reject_retries: (Number(hmail.todo.notes.reject_retries) || 0) + 1,
    attempt_base: lastAttempt,
    not_before: notBeforeMs,
  });
  await queueFile(outbound, queueDir, { mailFrom: hmail.todo.mail_from.address, rcptTo: rcpts, data, notes });
}
