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
import type { Readable } from 'node:stream';
import type { HarakaAddress, HarakaOutbound } from './haraka.js';
import type { QueueMemory } from './queue-memory.js';

// Haraka's own copies of its helpers, so addresses and ids serialize as its own code writes them.
const harakaRequire = createRequire(createRequire(import.meta.url).resolve('Haraka/package.json'));
const { Address } = harakaRequire('@haraka/email-address') as { Address: new (addr: string) => HarakaAddress };
const utils = harakaRequire('haraka-utils') as { uuid(): string; date_to_str(d: Date): string };

/** outbound.build_todo's replacer: the message stream is not part of the header. */
const todoReplacer = (key: string, value: unknown) => (key === 'message_stream' ? undefined : value);

/** Where the header block ends (the blank line), in the DATA form; -1 when there is none. */
function headerEnd(data: string | Buffer): number {
  if (data.indexOf('\r\n') === 0) return 0;
  const i = data.indexOf('\r\n\r\n');
  return i < 0 ? -1 : i + 2;
}

/**
 * The message as Haraka keeps it (send_email's line loop, on the whole message at once): every
 * line ending CRLF, a leading dot doubled (RFC 5321 §4.5.2), a line ending after the last line.
 * Latin-1 maps each byte to one char and back, so no byte changes but these.
 */
export function dataForm(raw: Buffer): string | Buffer {
  // What the builder makes (CRLF lines, a line break at the end, no line starting with a dot) is
  // its own DATA form: the bytes go into the file as they are, without a copy as a string and back.
  if (inDataForm(raw)) return raw;
  // Only a bare LF is replaced: a CRLF message comes back as the same string.
  let s = raw.toString('latin1').replace(/(?<!\r)\n/g, '\r\n');
  if (!s.endsWith('\r\n')) s += s.endsWith('\r') ? '\n' : '\r\n';
  return s.replace(/(^|\n)\./g, '$1..');
}

/** True when dataForm has nothing to change: the message ends with CRLF, every LF follows a CR, no line starts with a dot. */
function inDataForm(raw: Buffer): boolean {
  const n = raw.length;
  if (n < 2 || raw[n - 2] !== 0x0d || raw[n - 1] !== 0x0a || raw[0] === 0x2e || raw.includes('\n.')) return false;
  for (let i = raw.indexOf(0x0a); i >= 0; i = raw.indexOf(0x0a, i + 1)) if (raw[i - 1] !== 0x0d) return false;
  return true;
}

// The first value of a header field (names are case-insensitive; a folded line starts with a space, so never matches).
const MESSAGE_ID = /(?:^|\r\n)Message-Id[ \t]*:([^\r]*)/i;
const DATE = /(?:^|\r\n)Date[ \t]*:([^\r]*)/i;
const field = (headers: string, re: RegExp): string | undefined => re.exec(headers)?.[1]?.trim();

/** True when send_email would leave the message's own header fields alone (it adds a missing Message-Id or Date). */
export function keepsHeaders(data: string | Buffer): boolean {
  const end = headerEnd(data);
  if (end < 0) return false;
  const headers = typeof data === 'string' ? data.slice(0, end) : data.toString('latin1', 0, end);
  const id = field(headers, MESSAGE_ID);
  return id !== undefined && id !== '<>' && field(headers, DATE) !== undefined;
}

export interface QueueFileMessage {
  mailFrom: string;
  rcptTo: readonly string[];
  /**
   * The message in DATA form: a string or bytes (dataForm) whose headers send_email would keep
   * (keepsHeaders), or a stream of it (spool.ts queueStream: a message our builder made, which
   * has its Message-ID and Date), so a large one never sits whole in memory.
   */
  data: string | Buffer | Readable;
  /** The queue item's notes (a haraka-notes object), as send_email's options.notes. */
  notes: object;
}

/** Writes every chunk of `source` at the file's position. */
async function writeAll(fh: fsp.FileHandle, source: Buffer | AsyncIterable<Buffer>): Promise<void> {
  if (Buffer.isBuffer(source)) return fh.writeFile(source);
  for await (const chunk of source) await fh.writeFile(chunk);
}

/**
 * A new file of `chunks`, fsynced; removed again if any step fails. With fs's callbacks: a message's
 * file took five fs/promises calls (open, two writes, sync, close), whose FileHandle and promise
 * machinery cost the gateway's main thread about 150 µs per message, as much as building it.
 */
function writeSynced(file: string, chunks: Buffer[]): Promise<void> {
  return new Promise((resolve, reject) => {
    fs.open(file, 'wx', 0o600, (err, fd) => {
      if (err) return reject(err);
      const fail = (e: Error) => fs.close(fd, () => fs.rm(file, { force: true }, () => reject(e)));
      const write = (rest: Buffer[]) =>
        fs.writev(fd, rest, (err, n) => {
          if (err) return fail(err);
          // A short write (a full disk midway) goes on from where it stopped, or fails.
          const left = rest.reduce((sum, b) => sum + b.length, 0) - n;
          if (left > 0) return n > 0 ? write(after(rest, n)) : fail(new Error(`short write to ${file}`));
          fs.fsync(fd, (err) => {
            if (err) return fail(err);
            fs.close(fd, (err) => (err ? fail(err) : resolve()));
          });
        });
      write(chunks);
    });
  });
}

/** `chunks` without their first `n` bytes. */
function after(chunks: Buffer[], n: number): Buffer[] {
  const out: Buffer[] = [];
  for (const c of chunks) {
    if (n >= c.length) n -= c.length;
    else {
      out.push(n ? c.subarray(n) : c);
      n = 0;
    }
  }
  return out;
}

/**
 * Queues `msg` as send_email would: one file per recipient domain, each fsynced and renamed into
 * `queueDir` before any is handed to the delivery queue. Resolves with send_email's answer text;
 * on failure nothing is left in the queue dir.
 */
export async function queueFile(outbound: HarakaOutbound, queueDir: string, msg: QueueFileMessage, memory?: QueueMemory): Promise<string> {
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
  const body =
    typeof msg.data === 'string'
      ? [Buffer.from(received + msg.data, 'latin1')]
      : Buffer.isBuffer(msg.data)
        ? [Buffer.from(received, 'latin1'), msg.data]
        : undefined;
  const transaction = { mail_from: mailFrom, notes: msg.notes, uuid, message_stream: undefined };
  const written: Array<{ fname: string; dest: string; notes: object; head: Buffer }> = [];
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
      if (body) {
        await writeSynced(tmp, [head, ...body]);
        await fsp.rename(tmp, dest);
        written.push({ fname, dest, notes: todo.notes, head });
        continue;
      }
      const fh = await fsp.open(tmp, 'wx', 0o600);
      try {
        await fh.writeFile(head);
        if (!written.length) {
          await fh.writeFile(Buffer.from(received));
          await writeAll(fh, msg.data as Readable);
        } else {
          // The stream is read once: a further domain's file copies the message from the first.
          const first = written[0]!;
          await writeAll(fh, fs.createReadStream(first.dest, { start: first.head.length }));
        }
        await fh.sync();
      } catch (err) {
        await fh.close().catch(() => {});
        await fsp.rm(tmp, { force: true });
        throw err;
      }
      await fh.close();
      await fsp.rename(tmp, dest);
      written.push({ fname, dest, notes: todo.notes, head });
    }
  } catch (err) {
    if (!body) (msg.data as Readable).destroy();
    await Promise.all(written.map((w) => fsp.rm(w.dest, { force: true })));
    throw err;
  }
  for (const w of written) {
    // Haraka would read back what it was just handed (queue-memory.ts).
    if (body && memory) memory.remember(w.dest, w.head, body);
    outbound.delivery_queue.push(new outbound.HMailItem(w.fname, w.dest, w.notes));
  }
  return `Message Queued (${uuid})`;
}
