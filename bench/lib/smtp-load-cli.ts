// `node --import tsx bench/lib/smtp-load-cli.ts '<SmtpLoadOptions as JSON>'`: the SMTP load of
// bench/lib/smtp-load.ts in a process of its own. Prints "start <epoch ms>" once every
// session is open and sending begins, then the result as one JSON line (latencies summarised).
import fs from 'node:fs';
import { smtpLoad, type SmtpLoadOptions } from './smtp-load.js';

const o = JSON.parse(process.argv[2] ?? '{}') as SmtpLoadOptions & { messageFile?: string };
if (o.messageFile) o.message = fs.readFileSync(o.messageFile, 'utf8');
const r = await smtpLoad(o, () => process.stdout.write(`start ${Date.now()}\n`));
const sorted = r.latencies.sort((a, b) => a - b);
const pct = (p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : 0);
const { latencies: _, ...rest } = r;
process.stdout.write(`${JSON.stringify({ ...rest, p50: pct(50), p99: pct(99) })}\n`);
