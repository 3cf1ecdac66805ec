// `node --import tsx bench/sqlite-insert.ts`: the CPU an accepted email costs in SQLite, as the
// group writer writes it (one transaction per group of 32; the email, request, recipient and event
// rows of the real schema): without savepoints (the group writer's first try) and with one per email
// (its second, after a write of the group threw), their statement journal in a temporary file
// (SQLite's default) and in memory (what core/sqlite/open.ts sets), in one run.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { prepare } from './lib/prepare.js';

await prepare();
const { openDatabase } = await import('../core/sqlite/open.js');
const { migrations } = await import('../control/store/sqlite/migrations.js');
const { uuidv7 } = await import('../core/ids.js');

const EMAILS = 20_000;
const GROUP = 32;
const request = JSON.stringify({ from: 'Bench <bench@bench.test>', to: 'r@ok.test', subject: 'Benchmark', text: 'A short transactional message body.' });

function run(tempStore: 'FILE' | 'MEMORY', savepoints: boolean): number {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-sqlite-bench-'));
  try {
    const db = openDatabase(path.join(dir, 't.db'), migrations);
    db.pragma(`temp_store = ${tempStore}`);
    db.prepare("INSERT INTO projects (id, slug, name, created_at) VALUES ('p1', 'p', 'P', 0)").run();
    const email =
      db.prepare(`INSERT INTO emails (id, project_id, status, from_addr, subject, bulk, error, error_code, created_at, updated_at, reached, system, scheduled_at)
      VALUES (?, 'p1', 'queued', 'bench@bench.test', 'Benchmark', 0, NULL, NULL, ?, ?, 'queued', 0, NULL)`);
    const emailRequest = db.prepare('INSERT INTO email_requests (email_id, request) VALUES (?, ?)');
    const recipient = db.prepare(
      "INSERT OR IGNORE INTO email_recipients (email_id, address, kind, status, updated_at, position) VALUES (?, 'r@ok.test', 'to', 'queued', ?, 0)",
    );
    const event = db.prepare("INSERT OR IGNORE INTO email_events (email_id, type, recipient, attempt, at, details) VALUES (?, 'queued', '', 0, ?, NULL)");
    const savepoint = db.prepare('SAVEPOINT write');
    const release = db.prepare('RELEASE write');
    const t0 = process.cpuUsage();
    for (let i = 0; i < EMAILS; i += GROUP) {
      db.transaction(() => {
        for (let j = 0; j < GROUP; j++) {
          const now = Date.now();
          const id = uuidv7(now);
          if (savepoints) savepoint.run();
          email.run(id, now, now);
          emailRequest.run(id, request);
          recipient.run(id, now);
          event.run(id, now);
          if (savepoints) release.run();
        }
      })();
    }
    const c = process.cpuUsage(t0);
    db.close();
    return (c.user + c.system) / EMAILS;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`${EMAILS} emails in groups of ${GROUP}, CPU µs per email (user + system)`);
for (const savepoints of [true, false])
  for (const temp of ['FILE', 'MEMORY'] as const)
    console.log(`  temp_store ${temp.padEnd(6)} ${savepoints ? 'savepoint per email' : 'no savepoints      '}  ${run(temp, savepoints).toFixed(1)} µs`);
