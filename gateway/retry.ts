// Automatic retries of `rejected` recipients (a policy or reputation 5xx, or a 4xx that
// outlasted Haraka's temp-fail schedule). Haraka bounces every 5xx and deletes the
// queue item, so we take the mail back: the same signed bytes are queued again for the
// refused recipients, carrying when they are due (not_before, enforced by the pacing
// plugin), how many such retries were made and how many attempts came before. The new
// file is on disk before Haraka deletes the old one, so a crash loses neither.
import Notes from 'haraka-notes';
import constants from 'haraka-constants';
import type { HarakaOutbound, HMailItem } from './haraka.js';

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
 * are numbered on from lastAttempt. Resolves once Haraka has the new file on disk;
 * rejects when it could not be queued.
 */
export async function requeueRejected(outbound: HarakaOutbound, hmail: HMailItem, rcpts: string[], notBeforeMs: number, lastAttempt: number): Promise<void> {
  const raw = (await readAll(hmail.data_stream())).toString('utf8').replace(OUR_RECEIVED, '');
  const notes = new Notes({
    ...hmail.todo.notes,
    skip_plugins: [],
    reject_retries: (Number(hmail.todo.notes.reject_retries) || 0) + 1,
    attempt_base: lastAttempt,
    not_before: notBeforeMs,
  });
  await new Promise<void>((resolve, reject) =>
    outbound.send_email(
      hmail.todo.mail_from.address,
      rcpts,
      raw,
      (code, msg) => (code === constants.ok ? resolve() : reject(new Error(msg || `not queued (${code})`))),
      { notes },
    ),
  );
}
