// Waiting in tests for something that happens a moment later (a log line, a key in Redis).
import { setTimeout as sleep } from 'node:timers/promises';

/** Polls fn until it is true (every 10 ms), or fails after ms. */
export async function until(fn: () => boolean, ms: number, what: string): Promise<number> {
  const t0 = Date.now();
  while (!fn()) {
    if (Date.now() - t0 > ms) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(10);
  }
  return Date.now() - t0;
}
