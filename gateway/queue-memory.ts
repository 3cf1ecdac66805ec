// A queue file this process has just written is known: Haraka need not read it back. Haraka's
// HMailItem reads every file it is handed: a stat for its size, two read streams for the todo
// header, a third for the message at DATA. Each open, read and close is a request to libuv's thread
// pool, and on a small busy machine the hand-off and wake-ups cost more CPU than the reads (about
// 15-60 µs per request on a 2-core VM; `bench/fs-requests.ts`): ten requests per message.
//
// queueFile remembers what it wrote; the item then takes its size and its todo from memory through
// Haraka's own read_todo (so the todo is parsed exactly as from the file), and its first data stream
// is the written bytes. Everything else reads the file as before: a later attempt, a bounce's copy of
// the headers, a split-off. The bytes are dropped once sent, deferred or discarded, and what is held
// at once has a budget, so a backlog waiting for its destination does not sit in memory.
import { Readable } from 'node:stream';
import type { HMailItem, QueueItemProto } from './haraka.js';

export interface QueueMemory {
  /**
   * `path` was just written as `head` (length and todo) then `body`; the HMailItem made for it next
   * reads them from here. When the budget is spent (false) it reads its message from the file.
   */
  remember(path: string, head: Buffer, body: readonly Buffer[]): boolean;
  /** Message bytes held now, and items served from memory so far. */
  stats(): { heldBytes: number; served: number };
}

interface Known {
  head: Buffer;
  body: readonly Buffer[] | undefined;
  /** The message's length (after the head), whether held or not. */
  bytes: number;
}

const KNOWN = Symbol('postgate.queueMemory');
type Item = HMailItem & { [KNOWN]?: Known; file_size: number };

/** Wraps `proto`'s reads (once per process: Haraka's class is one) with what queueFile remembers. */
export function installQueueMemory(proto: QueueItemProto, budgetBytes: number): QueueMemory {
  const waiting = new Map<string, Known>();
  let heldBytes = 0;
  let served = 0;
  const { size_file, _stream_bytes_from, data_stream, discard, deferred_respond } = proto;

  const drop = (item: Item) => {
    const k = item[KNOWN];
    if (!k) return;
    if (k.body) heldBytes -= k.bytes;
    item[KNOWN] = undefined;
  };

  proto.size_file = function (this: Item) {
    const k = waiting.get(this.path);
    if (!k) return size_file.call(this);
    waiting.delete(this.path);
    this[KNOWN] = k;
    this.file_size = k.head.length + k.bytes;
    served++;
    // Haraka's own parse, fed from memory by _stream_bytes_from below.
    return proto.read_todo.call(this);
  };

  proto._stream_bytes_from = function (this: Item, file, opts) {
    const head = this[KNOWN]?.head;
    const { start, end } = opts;
    if (head && file === this.path && start !== undefined && end !== undefined && end < head.length) {
      return Promise.resolve(head.subarray(start, end + 1));
    }
    return _stream_bytes_from.call(this, file, opts);
  };

  proto.data_stream = function (this: Item) {
    const body = this[KNOWN]?.body;
    if (!body) return data_stream.call(this);
    drop(this);
    // One chunk, as the file's read stream gives a message under 64 kB: one socket write.
    const stream = new Readable({ read() {} });
    stream.push(body.length === 1 ? body[0] : Buffer.concat(body as Buffer[]));
    stream.push(null);
    return stream;
  };

  proto.discard = function (this: Item) {
    drop(this);
    return discard.call(this);
  };

  proto.deferred_respond = function (this: Item, ...args: unknown[]) {
    drop(this);
    return deferred_respond.apply(this, args);
  };

  return {
    remember(path, head, body) {
      const bytes = body.reduce((sum, b) => sum + b.length, 0);
      const keep = heldBytes + bytes <= budgetBytes;
      if (keep) heldBytes += bytes;
      waiting.set(path, { head, body: keep ? body : undefined, bytes });
      return keep;
    },
    stats: () => ({ heldBytes, served }),
  };
}
