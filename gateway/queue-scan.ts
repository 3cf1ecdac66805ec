// Haraka's queue files at start: the Enqueue keys they carry (recoverPending), and the
// removal of those whose delivery is already recorded (removeFinished). Each file is a 4-byte length,
// the JSON "todo" (whose notes carry our enqueue_key, or only email_id in files
// written before keys existed), then the message; files named
// "__tmp__.*" are unfinished writes that Haraka deletes at start, "error.*" are
// files it gave up reading.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../core/log.js';
import type { Outbox } from './outbox/outbox.js';

const isQueueFile = (name: string) => !name.startsWith('__tmp__.') && !name.startsWith('error.');

export async function queueFiles(queueDir: string): Promise<string[]> {
  try {
    return (await fs.readdir(queueDir)).filter(isQueueFile);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/** The Enqueue key a queue file carries; undefined when it is unreadable. */
export async function enqueueKeyOf(file: string): Promise<string | undefined> {
  const fh = await fs.open(file, 'r');
  try {
    const len = Buffer.alloc(4);
    if ((await fh.read(len, 0, 4, 0)).bytesRead < 4) return undefined;
    const todo = Buffer.alloc(len.readUInt32BE(0));
    const { bytesRead } = await fh.read(todo, 0, todo.length, 4);
    const parsed = JSON.parse(todo.subarray(0, bytesRead).toString('utf8')) as { notes?: { email_id?: unknown; enqueue_key?: unknown } };
    const key = parsed.notes?.enqueue_key ?? parsed.notes?.email_id;
    return typeof key === 'string' ? key : undefined;
  } catch {
    return undefined; // unreadable or half-written: Haraka will not deliver it either
  } finally {
    await fh.close();
  }
}

/** Which of `wanted` have a message in Haraka's queue. */
export async function queuedEmailIds(queueDir: string, wanted: ReadonlySet<string>): Promise<Set<string>> {
  const found = new Set<string>();
  if (!wanted.size) return found;
  for (const name of await queueFiles(queueDir)) {
    const id = await enqueueKeyOf(path.join(queueDir, name)).catch(() => undefined);
    if (id !== undefined && wanted.has(id)) found.add(id);
  }
  return found;
}

/**
 * Removes queue files whose delivery is already recorded as over (Outbox.appendEvents'
 * `finished`) but which a crash kept Haraka from deleting: loaded, they would be sent again.
 * Runs at start, before Haraka loads its queue dir.
 */
export async function removeFinished(outbox: Outbox, queueDir: string, log: Logger): Promise<void> {
  const files = await outbox.finishedFiles();
  if (!files.length) return;
  let removed = 0;
  for (const name of files) {
    // Names come from Haraka's own queue file names; never let one reach outside the dir.
    if (path.basename(name) !== name) continue;
    try {
      await fs.unlink(path.join(queueDir, name));
      removed++;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  await outbox.forgetFinished(files);
  if (removed) log.warn({ removed }, 'removed queue files already delivered before a crash');
}
