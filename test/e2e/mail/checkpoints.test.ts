// The supervisor checkpoints control's database (core/sqlite/checkpointer.ts): what control
// commits reaches the database file itself, copied by the supervisor's connection rather than
// on control's event loop.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { controlDbFile } from '../../../core/data-files.js';
import { Stack, sleep } from '../../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  // At debug level the supervisor logs each checkpoint it runs.
  stack = await Stack.start({ env: { POSTGATE_LOG_LEVEL: 'debug' } });
});
afterAll(async () => {
  await stack?.stop();
});

/** Emails in the database file alone (a copy without its WAL): what was checkpointed into it. */
function emailsInFileAlone(db: string): number {
  const copy = path.join(stack.dataDir, 'alone.db');
  fs.copyFileSync(db, copy);
  const alone = new Database(copy, { readonly: true });
  try {
    const table = alone.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'emails'").pluck().get();
    return table ? (alone.prepare('SELECT count(*) FROM emails').pluck().get() as number) : 0;
  } finally {
    alone.close();
    fs.rmSync(copy);
  }
}

/** The supervisor's checkpoints of `file`, from the stack's log. */
function checkpointsOf(file: string): Array<{ frames: number; copied: number }> {
  return fs
    .readFileSync(stack.logFile, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"msg":"checkpointed"'))
    .map((l) => JSON.parse(l) as { proc: string; file: string; frames: number; copied: number })
    .filter((l) => l.proc === 'supervisor' && l.file === file);
}

it('copies accepted mail from the WAL into the database file from the supervisor', async () => {
  const p = await stack.createProject('ckpt');
  await stack.verifyDomain('ckpt', 'ckpt.test');
  const db = controlDbFile(stack.dataDir);
  const item = (i: number) => ({ from: 'a@ckpt.test', to: `r${i}@nowhere.invalid`, subject: 's', text: `${i} ${'x'.repeat(20_000)}` });
  // 2 MB a batch, about 500 pages of WAL each: past the 1,000 pages that make a checkpoint worth it.
  for (let sent = 0; sent < 400; sent += 100) {
    const r = await stack.api(
      'POST',
      '/v1/emails/batch',
      p.keys.live,
      Array.from({ length: 100 }, (_, i) => item(sent + i)),
    );
    expect(r.status).toBe(202);
  }
  let runs: ReturnType<typeof checkpointsOf> = [];
  for (let i = 0; i < 100 && !runs.length; i++) {
    await sleep(50);
    runs = checkpointsOf(db);
  }
  expect(runs.length).toBeGreaterThan(0);
  expect(runs[0]!.copied).toBeGreaterThanOrEqual(1000);
  expect(emailsInFileAlone(db)).toBeGreaterThan(0);
});
