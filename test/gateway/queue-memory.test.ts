// Queue items read from memory (gateway/queue-memory.ts) against Haraka reading the same queue files:
// the same size, todo and message bytes; later reads and unread drops go back to the file and free
// the memory; the budget bounds what is held.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const exec = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-qmem-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

interface View {
  size: number;
  dataStart: number;
  todo: string;
  data: string;
}
interface Probe {
  compared: Array<{ file: string; plain: View; mine: View; again: string; servedBefore: number }>;
  heldAfterQueue: number[];
  afterReads: { heldBytes: number; served: number };
  heldBeforeDrops: number;
  heldAfterDiscard: number;
  heldAfterDeferral: number;
  deferredData: string;
  deferredPath: string;
  expected: string[];
}

describe('queue items Haraka need not read back', () => {
  it('give Haraka what its file gives, hold a budget of bytes, and let go of them', async () => {
    const out = path.join(dir, 'out.json');
    await exec(process.execPath, ['--import', 'tsx', path.join(root, 'test/helpers/queue-memory-probe.ts'), dir, out], { cwd: root });
    const p = JSON.parse(fs.readFileSync(out, 'utf8')) as Probe;

    // Four files: the second message went to two domains.
    expect(p.compared).toHaveLength(4);
    for (const c of p.compared) {
      expect(c.mine, c.file).toEqual(c.plain);
      expect(c.again, c.file).toBe(c.plain.data);
      expect(c.plain.size).toBeGreaterThan(c.plain.dataStart);
    }
    const received = /^Received: \(postgate\); [^\r\n]*\r\n/;
    const messages = p.compared.map((c) => c.plain.data.replace(received, ''));
    // DATA form: the dot doubled.
    const stuffed = p.expected.map((m) => m.replace('\r\n.dot', '\r\n..dot'));
    expect(messages).toEqual([stuffed[0], stuffed[1], stuffed[1], stuffed[2]]);

    // The first message (~230 bytes) and both files of the second (~330 each) fit 1,000 bytes; the third does not.
    const [one, two, three] = p.heldAfterQueue;
    expect(one).toBeGreaterThan(0);
    expect(two).toBeGreaterThan(one!);
    expect(two).toBeLessThanOrEqual(1000);
    expect(three).toBe(two);
    // Every item took its todo from memory (the plain ones made from the same files did not count).
    expect(p.afterReads.served).toBe(4);
    expect(p.afterReads.heldBytes).toBe(0);

    // Held until discarded or deferred, then read from the file (renamed by the deferral).
    expect(p.heldBeforeDrops).toBeGreaterThan(0);
    expect(p.heldAfterDiscard).toBe(p.heldBeforeDrops / 2);
    expect(p.heldAfterDeferral).toBe(0);
    expect(p.deferredData.replace(received, '')).toBe(stuffed[3]);
    expect(fs.existsSync(p.deferredPath)).toBe(true);
  });
});
