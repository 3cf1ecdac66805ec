// Queue files whose delivery is recorded (Outbox.appendEvents' `finished`, in the events'
// transaction) and their removal at start (removeFinished), which keeps a kill -9 between the
// record and Haraka's unlink from sending a message twice.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../core/log.js';
import { Outbox } from '../../gateway/outbox/outbox.js';
import { removeFinished } from '../../gateway/queue-scan.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-finished-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const log = createLogger('test', 'silent');

const sent = (emailId: string) => ({
  emailId,
  type: 'sent' as const,
  recipient: 'r@x.test',
  atMs: 1,
  mx: '',
  response: '250',
  attempt: 1,
  enhancedCode: '',
  nextAttemptMs: 0,
});

describe('finished queue files', () => {
  it('are recorded with their events, removed at start (only they), then forgotten', async () => {
    const queue = path.join(dir, 'queue');
    fs.mkdirSync(queue);
    for (const f of ['done_1', 'done_2', 'waiting_3']) fs.writeFileSync(path.join(queue, f), 'x');
    fs.writeFileSync(path.join(dir, 'outside'), 'x');
    const outbox = Outbox.open(path.join(dir, 'outbox.db'));
    try {
      const rows = await outbox.appendEvents([sent('em_1')], ['done_1']);
      expect(rows).toHaveLength(1);
      await outbox.appendEvents([], ['done_2', 'gone_4', '../outside']);
      expect((await outbox.finishedFiles()).sort()).toEqual(['../outside', 'done_1', 'done_2', 'gone_4']);

      await removeFinished(outbox, queue, log);
      expect(fs.readdirSync(queue)).toEqual(['waiting_3']);
      // A name is never followed out of the queue dir.
      expect(fs.existsSync(path.join(dir, 'outside'))).toBe(true);
      expect(await outbox.finishedFiles()).toEqual([]);
    } finally {
      outbox.close();
    }
  });

  it('are forgotten once older than the given time, newer ones kept', async () => {
    const outbox = Outbox.open(path.join(dir, 'prune.db'));
    try {
      await outbox.appendEvents([], ['old']);
      const cut = Date.now() + 1;
      await new Promise((r) => setTimeout(r, 5));
      await outbox.appendEvents([], ['new']);
      expect(await outbox.pruneFinished(cut)).toBe(1);
      expect(await outbox.finishedFiles()).toEqual(['new']);
    } finally {
      outbox.close();
    }
  });
});
