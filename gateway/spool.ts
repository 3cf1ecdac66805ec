// Messages with attachments never sit whole in the gateway's memory: the composer's stream
// is written to a file in the build dir, the DKIM worker signs that file, and its DATA form is
// copied as a stream into the queue file (queue-file.ts). The built file is removed once the
// message is queued. (Haraka's spool_dir, haraka-dir.ts, is only used by what send_email queues.)
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';

const LF = 0x0a;
const CR = 0x0d;
const DOT = 0x2e;
const CRLF = Buffer.from('\r\n');
const EXTRA_DOT = Buffer.from('.');

/** Writes a built message to `file` (0600, as everything in the data dir). */
export async function writeBuilt(file: string, message: Readable): Promise<void> {
  await pipeline(message, fs.createWriteStream(file, { mode: 0o600 }));
}

/** A key (email_id or email_id/n) as a file name. */
export const builtFile = (dir: string, key: string): string => path.join(dir, `${key.replace(/[^A-Za-z0-9_-]/g, '_')}.eml`);

/**
 * The lines of a message as Haraka keeps them in its queue (SMTP's DATA form), which its
 * stream input expects ready-made: CRLF line endings, a leading dot doubled (RFC 5321
 * §4.5.2), and a line ending after the last line. send_email does the same to a string.
 */
export class DataLines extends Transform {
  private atLineStart = true;
  private lastCR = false;

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    if (!chunk.length) return done();
    const parts: Buffer[] = [];
    let start = 0;
    if (this.atLineStart && chunk[0] === DOT) parts.push(EXTRA_DOT);
    for (let i = chunk.indexOf(LF); i !== -1; i = chunk.indexOf(LF, i + 1)) {
      const cr = i > 0 ? chunk[i - 1] === CR : this.lastCR;
      if (!cr) {
        parts.push(chunk.subarray(start, i), CRLF);
        start = i + 1;
      }
      if (i + 1 < chunk.length && chunk[i + 1] === DOT) {
        parts.push(chunk.subarray(start, i + 1), EXTRA_DOT);
        start = i + 1;
      }
    }
    parts.push(chunk.subarray(start));
    this.atLineStart = chunk[chunk.length - 1] === LF;
    this.lastCR = chunk[chunk.length - 1] === CR;
    done(null, parts.length === 1 ? parts[0] : Buffer.concat(parts));
  }

  override _flush(done: TransformCallback): void {
    if (!this.atLineStart) this.push(this.lastCR ? Buffer.from('\n') : CRLF);
    done();
  }
}

/** `head` (the DKIM signature) then the built file, as DataLines; fails (destroyed) if the file cannot be read. */
export function queueStream(head: Uint8Array, file: string): Readable {
  const lines = new DataLines();
  async function* parts() {
    if (head.length) yield Buffer.from(head);
    yield* fs.createReadStream(file, { highWaterMark: 256 * 1024 });
  }
  pipeline(Readable.from(parts()), lines).catch(() => {
    /* pipeline has destroyed `lines` with the error: its reader sees it */
  });
  return lines;
}

/** Removes what a crash may have left in these dirs (nothing there is needed after a restart). */
export async function clearDirs(...dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
    for (const name of await fsp.readdir(dir)) await fsp.rm(path.join(dir, name), { force: true, recursive: true });
  }
}

/** Removes files older than `ageMs` (Haraka's spool files of messages it failed to queue). */
export async function sweep(dir: string, ageMs: number): Promise<void> {
  const until = Date.now() - ageMs;
  for (const name of await fsp.readdir(dir).catch(() => [] as string[])) {
    const file = path.join(dir, name);
    const st = await fsp.stat(file).catch(() => undefined);
    if (st && st.mtimeMs < until) await fsp.rm(file, { force: true });
  }
}

/** A count of holders (messages being built or queued at once). */
export class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];

  constructor(n: number) {
    this.free = n;
  }

  async take(): Promise<() => void> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    };
  }
}
