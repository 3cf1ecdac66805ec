// `node --import tsx bench/email-lifecycle.ts`: control's store work for one email from accept to
// delivered, through the real Store (SQLite on a temporary file, as one node runs it): accept,
// the dispatcher's read and mark, then the gateway's `sending` and `sent` events as control
// applies them, in groups as the delivery log gets them. Printed as CPU µs per email by stage
// and the bytes written (WAL and database), for request bodies of several sizes: a status
// change should not cost more for a larger email. Bounded: BENCH_EMAILS (2000) per size. Writes
// bench/results/email-lifecycle-<time>.json.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { prepare } from './lib/prepare.js';

await prepare();
const { openStore } = await import('../control/store/open.js');
const { localInvalidator } = await import('../core/invalidation.js');
const { uuidv7 } = await import('../core/ids.js');
const { writeResult } = await import('./lib/results.js');

const EMAILS = Number(process.env.BENCH_EMAILS || 2000);
const GROUP = 50;
const SIZES = [300, 5_000, 30_000, 100_000];
const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

/** Bytes this process has passed to write() so far (/proc/self/io): SQLite's WAL and database writes. */
function written(): number {
  return Number(/^wchar: (\d+)/m.exec(fs.readFileSync('/proc/self/io', 'utf8'))?.[1] ?? 0);
}

async function measure(bodyBytes: number): Promise<{ bodyBytes: number; usPerEmail: number; stages: Record<string, number>; writtenKb: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-lifecycle-'));
  const store = await openStore({ dataDir: dir, storage: { synchronous: 'FULL', maxBatch: 1000 } }, localInvalidator());
  try {
    const projectId = 'prj_bench';
    await store.projects.create({ id: projectId, slug: 'bench', name: 'Bench', plan: 'scale', createdAt: Date.now() }, []);
    const html = `<p>${'x'.repeat(Math.max(0, bodyBytes - 7))}</p>`;
    const request = JSON.stringify({ from: 'Bench <bench@bench.test>', to: ['r@ok.test'], subject: 'Benchmark', html, text: '', tags: [] });
    const written0 = written();
    const stages = { accept: 0, dispatch: 0, sending: 0, sent: 0 };
    const cpu = () => {
      const c = process.cpuUsage();
      return c.user + c.system;
    };
    let seq = 0;
    for (let done = 0; done < EMAILS; done += GROUP) {
      const now = Date.now();
      const ids = Array.from({ length: GROUP }, () => uuidv7(now));
      let t = cpu();
      await Promise.all(
        ids.map((id) =>
          store.emails.accept({
            id,
            projectId,
            status: 'queued',
            from: 'bench@bench.test',
            subject: 'Benchmark',
            bulk: false,
            request,
            createdAt: now,
            recipients: [{ address: 'r@ok.test', kind: 'to' }],
          }),
        ),
      );
      stages.accept += cpu() - t;
      t = cpu();
      const pending = await store.emails.undispatched(GROUP);
      await store.emails.markDispatched(
        pending.map((e) => e.id),
        now,
      );
      stages.dispatch += cpu() - t;
      for (const type of ['sending', 'sent'] as const) {
        t = cpu();
        await store.deliveryLog.apply(
          'gw',
          ids.map((emailId) => ({ seq: ++seq, emailId, type, recipient: 'r@ok.test', at: now, attempt: 1, details: {} })),
        );
        stages[type] += cpu() - t;
      }
    }
    const total = Object.values(stages).reduce((a, b) => a + b, 0);
    return {
      bodyBytes,
      usPerEmail: total / EMAILS,
      stages: Object.fromEntries(Object.entries(stages).map(([k, v]) => [k, v / EMAILS])),
      writtenKb: (written() - written0) / 1024 / EMAILS,
    };
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const rows = [];
for (const size of SIZES) {
  const r = await measure(size);
  rows.push(r);
  log(`${size} B: ${r.usPerEmail.toFixed(1)} µs per email`);
}
const f = (n: number) => n.toFixed(1).padStart(9);
console.log(`\nSQLite store, ${EMAILS} emails per size, groups of ${GROUP}: CPU µs per email (this process)\n`);
console.log(
  `${'request body'.padEnd(14)}${'accept'.padStart(9)}${'dispatch'.padStart(9)}${'sending'.padStart(9)}${'sent'.padStart(9)}${'total'.padStart(9)}   written per email`,
);
for (const r of rows)
  console.log(
    `${`${r.bodyBytes} B`.padEnd(14)}${f(r.stages.accept!)}${f(r.stages.dispatch!)}${f(r.stages.sending!)}${f(r.stages.sent!)}${f(r.usPerEmail)}   ${r.writtenKb.toFixed(1)} kB`,
  );
const file = writeResult('email-lifecycle', { emails: EMAILS, group: GROUP, rows });
console.log(`\nfigures written to ${file}`);
