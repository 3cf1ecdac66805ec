// Queue files written in one piece. Haraka's send_email takes a finished message apart into
// lines and builds it up again through a transaction (a Buffer and a header-parser step per
// line, a message stream, a line transformer, a header skipper) before it writes its queue
// file: per message a dozen stream objects, per line a few allocations, all to reproduce bytes
// we already hold, signed. This writes the file Haraka's process_delivery writes (the 4-byte
// length and the todo JSON as outbound.build_todo serializes it, then the message in SMTP's
// DATA form under the Received line Haraka adds), fsynced, then renamed into the queue dir, and
// hands Haraka its HMailItem, as process_delivery does. The bytes are kept exactly (Haraka's
// path decodes the message as UTF-8 on the way).
//
// A message Haraka would change beyond that (no Message-Id or Date: it adds them) is not taken
// here: the caller gives it to send_email. A message with attachments comes as a stream of its
// DATA form (spool.ts) and is copied into the file chunk by chunk, so it never sits whole in
// memory and Haraka's spool file is not needed.
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { HarakaAddress, HarakaOutbound, HMailItem } from './haraka.js';

// Haraka's own copies of its helpers, so addresses and ids serialize as its own code writes them.
const harakaRequire = createRequire(createRequire(import.meta.url).resolve('Haraka/package.json'));
const { Address } = harakaRequire('@haraka/email-address') as { Address: new (addr: string) => HarakaAddress };
const utils = harakaRequire('haraka-utils') as { uuid(): string; date_to_str(d: Date): string };
const Notes = harakaRequire('haraka-notes') as new (notes: object) => object;
/** Haraka's DELAY return code (haraka-constants), what send_email_respond is given for a pacing delay. */
const DELAY = (harakaRequire('haraka-constants') as { delay: number }).delay;

/** outbound.build_todo's replacer: the message stream is not part of the header. */
const todoReplacer = (key: string, value: unknown) => (key === 'message_stream' ? undefined : value);

/** Where the header block ends (the blank line), in the DATA form; -1 when there is none. */
function headerEnd(data: string): number {
  if (data.startsWith('\r\n')) return 0;
  const i = data.indexOf('\r\n\r\n');
  return i < 0 ? -1 : i + 2;
}

/**
 * The message as Haraka keeps it (send_email's line loop, on the whole message at once): every
 * line ending CRLF, a leading dot doubled (RFC 5321 §4.5.2), a line ending after the last line.
 * Latin-1 maps each byte to one char and back, so no byte changes but these.
 */
export function dataForm(raw: Buffer): string {
  // Only a bare LF is replaced: a CRLF message (what the builder makes) comes back as the same string.
  let s = raw.toString('latin1').replace(/(?<!\r)\n/g, '\r\n');
  if (!s.endsWith('\r\n')) s += s.endsWith('\r') ? '\n' : '\r\n';
  return s.replace(/(^|\n)\./g, '$1..');
}

// The first value of a header field (names are case-insensitive; a folded line starts with a space, so never matches).
const MESSAGE_ID = /(?:^|\r\n)Message-Id[ \t]*:([^\r]*)/i;
const DATE = /(?:^|\r\n)Date[ \t]*:([^\r]*)/i;
const field = (headers: string, re: RegExp): string | undefined => re.exec(headers)?.[1]?.trim();

/** True when send_email would leave the message's own header fields alone (it adds a missing Message-Id or Date). */
export function keepsHeaders(data: string): boolean {
  const end = headerEnd(data);
  if (end < 0) return false;
  const headers = data.slice(0, end);
  const id = field(headers, MESSAGE_ID);
  return id !== undefined && id !== '<>' && field(headers, DATE) !== undefined;
}

export interface QueueFileMessage {
  mailFrom: string;
  rcptTo: readonly string[];
  /**
   * The message in DATA form: a string (dataForm) whose headers send_email would keep
   * (keepsHeaders), or a stream of it (spool.ts queueStream: a message our builder made, which
   * has its Message-ID and Date), so a large one never sits whole in memory.
   */
  data: string | Readable;
  /** The queue item's notes (a haraka-notes object), as send_email's options.notes. */
  notes: object;
}

/** Writes every chunk of `source` at the file's position. */
async function writeAll(fh: fsp.FileHandle, source: Buffer | AsyncIterable<Buffer>): Promise<void> {
  if (Buffer.isBuffer(source)) return fh.writeFile(source);
  for await (const chunk of source) await fh.writeFile(chunk);
}

/**
 * Queues `msg` as send_email would: one file per recipient domain, each fsynced and renamed into
 * `queueDir` before any is handed to the delivery queue. Resolves with send_email's answer text;
 * on failure nothing is left in the queue dir.
 */
export async function queueFile(outbound: HarakaOutbound, queueDir: string, msg: QueueFileMessage): Promise<string> {
  const mailFrom = new Address(msg.mailFrom);
  const byDomain = new Map<string, HarakaAddress[]>();
  for (const r of msg.rcptTo) {
    const a = new Address(r);
    const list = byDomain.get(a.host);
    if (list) list.push(a);
    else byDomain.set(a.host, [a]);
  }
  if (!byDomain.size) throw new Error('No recipients for email');

  const uuid = utils.uuid();
  // send_trans_email's leading Received line (outbound.ini received_header), then the message.
  const received = `Received: (postgate); ${utils.date_to_str(new Date())}\r\n`;
  const body = typeof msg.data === 'string' ? Buffer.from(received + msg.data, 'latin1') : undefined;
  const transaction = { mail_from: mailFrom, notes: msg.notes, uuid, message_stream: undefined };
  const written: Array<{ fname: string; dest: string; notes: object; bodyAt: number; todoJson: string }> = [];
  try {
    let n = 1;
    for (const [domain, rcpts] of byDomain) {
      const todo = new outbound.TODOItem(domain, rcpts, transaction);
      todo.uuid = `${uuid}.${n++}`;
      const json = `\n${JSON.stringify(todo, todoReplacer, '\t')}\n`;
      const head = Buffer.alloc(4 + Buffer.byteLength(json));
      head.writeUInt32BE(head.length - 4, 0);
      head.write(json, 4);
      const fname = outbound.qfile.name();
      const tmp = path.join(queueDir, `__tmp__.${fname}`);
      const dest = path.join(queueDir, fname);
      const fh = await fsp.open(tmp, 'wx', 0o600);
      try {
        await fh.writeFile(head);
        if (body) await fh.writeFile(body);
        else if (!written.length) {
          await fh.writeFile(Buffer.from(received));
          await writeAll(fh, msg.data as Readable);
        } else {
          // The stream is read once: a further domain's file copies the message from the first.
          const first = written[0]!;
          await writeAll(fh, fs.createReadStream(first.dest, { start: first.bodyAt }));
        }
        await fh.sync();
      } catch (err) {
        await fh.close().catch(() => {});
        await fsp.rm(tmp, { force: true });
        throw err;
      }
      await fh.close();
      await fsp.rename(tmp, dest);
      written.push({ fname, dest, notes: todo.notes, bodyAt: head.length, todoJson: json });
    }
  } catch (err) {
    if (typeof msg.data !== 'string') msg.data.destroy();
    await Promise.all(written.map((w) => fsp.rm(w.dest, { force: true })));
    throw err;
  }
  for (const w of written) {
    const preload = body && { todoJson: w.todoJson, size: w.bodyAt + body.length, dataStart: w.bodyAt, data: body };
    outbound.delivery_queue.push(preload ? itemFromMemory(outbound, w.fname, w.dest, w.notes, preload) : new outbound.HMailItem(w.fname, w.dest, w.notes));
  }
  return `Message Queued (${uuid})`;
}

// A queue item made from what was just written. Haraka's HMailItem reads its file back three
// times before it can send (a stat, the 4-byte length, the todo JSON) and a fourth to send it:
// each a file opened, read and closed on the thread pool, with a stream around it. The item
// made here knows its todo and size, and its first send reads the message from memory. The file
// is on disk (fsynced) all the same: a later attempt, a bounce and a restart read it there. The
// bytes held this way are bounded (MEMORY_BUDGET) and let go as soon as the item sends, waits
// (a pacing delay, a temporary failure) or ends; past the budget an item reads its file.

/** The message bytes queue items may hold for their first send, in all. */
const MEMORY_BUDGET = 16 * 1024 * 1024;
let memoryHeld = 0;

/** Message bytes held by queue items right now (tests: back to 0 once the mail has gone). */
export function queuedInMemory(): number {
  return memoryHeld;
}

interface Preload {
  todoJson: string;
  size: number;
  dataStart: number;
  /** The file's bytes after the todo header (shared by the files of one message). */
  data: Buffer;
}

/** HMailItem's fields and methods this reads or replaces (Haraka 3.3.4, outbound/hmail.js). */
interface ItemInternals extends HMailItem {
  file_size: number;
  data_start: number;
  size_file(): void;
  emit(event: string): boolean;
}

type ItemClass = new (filename: string, path: string, notes: object) => HMailItem;

/** The preload for the item under construction: HMailItem's constructor calls size_file() before a subclass can set a field. */
let preloading: Preload | undefined;
const itemClasses = new WeakMap<object, ItemClass>();

function itemFromMemory(outbound: HarakaOutbound, fname: string, dest: string, notes: object, preload: Preload): HMailItem {
  if (memoryHeld + preload.data.length > MEMORY_BUDGET) return new outbound.HMailItem(fname, dest, notes);
  let Item = itemClasses.get(outbound.HMailItem);
  if (!Item) itemClasses.set(outbound.HMailItem, (Item = memoryItemClass(outbound.HMailItem as unknown as new (...a: unknown[]) => ItemInternals)));
  preloading = preload;
  try {
    return new Item(fname, dest, notes);
  } finally {
    preloading = undefined;
  }
}

function memoryItemClass(Base: new (...a: unknown[]) => ItemInternals): ItemClass {
  // The held bytes: no class field (it would be set after the base constructor, which fills it).
  const held = new WeakMap<object, Buffer>();
  const release = (item: object) => {
    const data = held.get(item);
    if (!data) return undefined;
    held.delete(item);
    memoryHeld -= data.length;
    return data;
  };
  class MemoryItem extends Base {
    override size_file(): void {
      const p = preloading;
      preloading = undefined;
      if (!p) return super.size_file();
      // What read_todo makes of the file, from the JSON just written.
      const todo = JSON.parse(p.todoJson) as { mail_from: string; rcpt_to: string[]; notes: object };
      this.todo = {
        ...todo,
        mail_from: new Address(todo.mail_from),
        rcpt_to: todo.rcpt_to.map((a) => new Address(a)),
        notes: new Notes(todo.notes),
      } as unknown as HMailItem['todo'];
      this.file_size = p.size;
      this.data_start = p.dataStart;
      held.set(this, p.data);
      memoryHeld += p.data.length;
      // read_todo announces it once its reads are done; the constructor's caller listens after this returns.
      process.nextTick(() => this.emit('ready'));
    }
    override data_stream(): NodeJS.ReadableStream {
      const data = release(this);
      return data ? Readable.from([data], { objectMode: false }) : super.data_stream();
    }
  }
  // Every way an item leaves the hands of its first send lets the bytes go.
  for (const method of ['send_email_respond', 'temp_fail', 'bounce', 'discard', 'delivered'] as const) {
    const base = (Base.prototype as unknown as Record<string, (...a: unknown[]) => unknown>)[method]!;
    (MemoryItem.prototype as unknown as Record<string, unknown>)[method] = function (this: object, ...args: unknown[]) {
      // send_email_respond goes on to send unless it was told to wait (a pacing delay).
      if (method !== 'send_email_respond' || args[0] === DELAY) release(this);
      return base.apply(this, args);
    };
  }
  return MemoryItem as unknown as ItemClass;
}
