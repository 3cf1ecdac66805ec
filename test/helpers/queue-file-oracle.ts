// Run as a process of its own (node --import tsx … <dir> <cases.json> <out.json>): Haraka's outbound reads
// its config once per process from $HARAKA. Queues each case twice into <dir>/queue, through
// Haraka's own send_email (as plugins/postgate_rpc does) and through gateway/queue-file.ts, and
// prints what each wrote: the todo (uuid and queue time left out) and the message bytes (the
// Received line's date left out), as JSON into <out.json> (Haraka logs to stdout).
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { disabledOutbound } from './haraka-outbound.js';
import constants from 'haraka-constants';
import Notes from 'haraka-notes';

const [dir, casesFile, outFile] = process.argv.slice(2) as [string, string, string];
const outbound = disabledOutbound(dir);
const { queueFile, dataForm } = await import('../../gateway/queue-file.js');
const { queueStream } = await import('../../gateway/spool.js');

interface Case {
  from: string;
  to: string[];
  /** The message, base64. */
  raw: string;
  /** Given as a stream of its DATA form, as a message with attachments is (gateway/spool.ts). */
  stream?: boolean;
}
interface Written {
  todo: Record<string, unknown>;
  /** The file's message part, base64. */
  data: string;
}

const queueDir = path.join(dir, 'queue');
const files = () => new Set(fs.readdirSync(queueDir));

/** The files a write added, oldest first (the counter in the name orders them). */
function added(before: Set<string>): Written[] {
  const names = [...files()].filter((f) => !before.has(f)).sort((a, b) => Number(a.split('_')[5]) - Number(b.split('_')[5]));
  return names.map((name) => {
    const buf = fs.readFileSync(path.join(queueDir, name));
    const len = buf.readUInt32BE(0);
    const { uuid: _u, queue_time: _t, ...todo } = JSON.parse(buf.subarray(4, 4 + len).toString('utf8'));
    const data = buf
      .subarray(4 + len)
      .toString('latin1')
      .replace(/^Received: \(postgate\); [^\r\n]*\r\n/, 'Received: (postgate); DATE\r\n');
    fs.rmSync(path.join(queueDir, name));
    return { todo, data: Buffer.from(data, 'latin1').toString('base64') };
  });
}

const notes = () => new Notes({ skip_plugins: [], email_id: 'e1', enqueue_key: 'e1' });
const cases = JSON.parse(fs.readFileSync(casesFile, 'utf8')) as Case[];
const out: Array<{ haraka: Written[]; ours: Written[] }> = [];
await new Promise((r) => setTimeout(r, 50)); // outbound binds its queues on the next tick
for (const c of cases) {
  const raw = Buffer.from(c.raw, 'base64');
  let before = files();
  const built = path.join(dir, 'built.eml');
  fs.writeFileSync(built, raw);
  await new Promise<void>((resolve, reject) => {
    let text: string | Readable = raw.toString('utf8');
    if (!text.endsWith('\n')) text += '\r\n';
    if (c.stream) text = queueStream(Buffer.alloc(0), built);
    outbound.send_email(c.from, [...c.to], text, (code: number, msg: string) => (code === constants.ok ? resolve() : reject(new Error(msg))), {
      notes: notes(),
    });
  });
  const haraka = added(before);
  before = files();
  const data = c.stream ? queueStream(Buffer.alloc(0), built) : dataForm(raw);
  await queueFile(outbound, queueDir, { mailFrom: c.from, rcptTo: c.to, data, notes: notes() });
  out.push({ haraka, ours: added(before) });
}
// A queue dir that is not there: queueFile fails and leaves nothing behind.
const broken = path.join(dir, 'broken');
fs.mkdirSync(broken);
const failure = await queueFile(outbound, path.join(broken, 'missing'), {
  mailFrom: 'a@example.com',
  rcptTo: ['x@one.test', 'y@two.test'],
  data: dataForm(Buffer.from(`Message-ID: <m@x>\r\nDate: Wed, 25 Nov 2026 10:00:00 +0000\r\n\r\nbody\r\n`)),
  notes: notes(),
}).then(
  () => 'queued',
  (err: Error) => err.message,
);
fs.writeFileSync(outFile, JSON.stringify({ cases: out, failure, leftInQueue: [...files()].length, leftInBroken: fs.readdirSync(broken).length }));
process.exit(0);
