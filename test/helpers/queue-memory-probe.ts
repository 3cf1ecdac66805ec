// Run as a process of its own (node --import tsx … <dir> <out.json>): Haraka's outbound reads its
// config once per process from $HARAKA. Queues messages through gateway/queue-file.ts with
// gateway/queue-memory.ts installed on Haraka's HMailItem, and compares each item it made with an
// item Haraka makes from the same file on its own: size, todo and the message stream's bytes. Then
// follows what the memory holds through a second read, a discard and a deferral.
import fs from 'node:fs';
import path from 'node:path';
import Notes from 'haraka-notes';
import type { HMailItem } from '../../gateway/haraka.js';
import { disabledOutbound } from './haraka-outbound.js';

const [dir, outFile] = process.argv.slice(2) as [string, string];
const outbound = disabledOutbound(dir);
const { queueFile, dataForm } = await import('../../gateway/queue-file.js');
const { installQueueMemory } = await import('../../gateway/queue-memory.js');

type Item = HMailItem & {
  file_size: number;
  data_start: number;
  once(e: string, f: () => void): void;
  discard(): void;
  deferred_respond(r: number, m: string, p: object): Promise<void>;
};
const queueDir = path.join(dir, 'queue');
const BODY = (n: number) =>
  `Message-ID: <m${n}@example.com>\r\nDate: Wed, 25 Nov 2026 10:00:00 +0000\r\nSubject: ${n}\r\n\r\n${'x'.repeat(n * 100)}\r\n.dot\r\n`;
// Room for the first two messages' bytes, not the third's.
const memory = installQueueMemory(outbound.HMailItem.prototype, 1000);
const items: Item[] = [];
const capture = { ...outbound, delivery_queue: { push: (h: Item) => items.push(h), length: () => items.length } };
await new Promise((r) => setTimeout(r, 50)); // outbound binds its queues on the next tick

const ready = (h: Item) => new Promise<void>((resolve) => (h.todo ? resolve() : h.once('ready', resolve)));
const read = (h: Item) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    const s = h.data_stream();
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
    s.on('error', reject);
  });
const view = async (h: Item) => {
  await ready(h);
  return { size: h.file_size, dataStart: h.data_start, todo: JSON.stringify(h.todo), data: await read(h) };
};
const fromFile = (h: Item) => new outbound.HMailItem(h.filename, h.path) as Item;
const notes = (id: string) => new Notes({ skip_plugins: [], email_id: id, enqueue_key: id });

const heldAfterQueue: number[] = [];
for (const [i, to] of [['x@one.test'], ['y@one.test', 'z@two.test'], ['w@one.test']].entries()) {
  await queueFile(capture, queueDir, { mailFrom: `b+${i}@example.com`, rcptTo: to, data: dataForm(Buffer.from(BODY(i + 1))), notes: notes(`e${i}`) }, memory);
  heldAfterQueue.push(memory.stats().heldBytes);
}
const compared = [];
for (const h of items) {
  const plain = await view(fromFile(h));
  const servedBefore = memory.stats().served;
  const mine = await view(h);
  // A second read, as a bounce's copy of the headers or a split-off makes, comes from the file.
  const again = await read(h);
  compared.push({ file: h.filename, plain, mine, again, servedBefore });
}
const afterReads = memory.stats();

// Dropped unread: on discard, and on a deferral.
const more: Item[] = [];
const capture2 = { ...capture, delivery_queue: { push: (h: Item) => more.push(h), length: () => more.length } };
for (const id of ['d1', 'd2']) {
  await queueFile(capture2, queueDir, { mailFrom: 'b@example.com', rcptTo: ['q@one.test'], data: dataForm(Buffer.from(BODY(1))), notes: notes(id) }, memory);
}
await Promise.all(more.map(ready));
const heldBeforeDrops = memory.stats().heldBytes;
more[0]!.discard();
const heldAfterDiscard = memory.stats().heldBytes;
// Haraka's temp_fail → deferred hook → deferred_respond: the file is renamed, the item waits.
await more[1]!.deferred_respond(900, '', { delay: 60, err: 'later' });
const heldAfterDeferral = memory.stats().heldBytes;
const deferredData = await read(more[1]!);
const deferredPath = more[1]!.path;

fs.writeFileSync(
  outFile,
  JSON.stringify({
    compared,
    heldAfterQueue,
    afterReads,
    heldBeforeDrops,
    heldAfterDiscard,
    heldAfterDeferral,
    deferredData,
    deferredPath,
    expected: [1, 2, 3, 1].map(BODY),
  }),
);
process.exit(0);
