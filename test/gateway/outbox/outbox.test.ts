// gateway/outbox/outbox.ts on a real SQLite file: events kept in order until control has them, the
// Enqueue idempotency states (pending → queued, a crash's pending ids found again), warm-up counters
// that add up, and what survives a reopen. (Finished queue files: test/gateway/queue-scan.test.ts.)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Outbox, type NewDeliveryEvent } from '../../../gateway/outbox/outbox.js';

let dir: string;
let file: string;
let outbox: Outbox;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-outbox-'));
  file = path.join(dir, 'outbox.db');
  outbox = Outbox.open(file, { synchronous: 'NORMAL' });
});

afterEach(() => {
  outbox.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const event = (emailId: string, type: NewDeliveryEvent['type'], recipient = 'a@inbox.test'): NewDeliveryEvent => ({
  emailId,
  type,
  recipient,
  atMs: 1000,
  mx: 'mx.inbox.test',
  response: '250 OK',
  attempt: 1,
  enhancedCode: '',
  nextAttemptMs: 0,
});

describe('events', () => {
  it('get increasing seqs, optional fields as empty strings, and are read after a seq in order', async () => {
    const rows = await outbox.appendEvents([event('e1', 'sending'), event('e1', 'sent'), { ...event('e2', 'bounced'), cause: 'receiver', provider: 'google' }]);
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3]);
    expect(rows[0]).toMatchObject({ cause: '', rule: '', provider: '', token: '', source: '' });
    // A hold by a shaping rule keeps the rule's name.
    await outbox.appendEvents([{ ...event('e3', 'deferred'), cause: 'shaping', rule: 'yahoo-complaints', provider: 'yahoo' }]);
    expect((await outbox.eventsAfter(3, 1))[0]).toMatchObject({ cause: 'shaping', rule: 'yahoo-complaints' });
    expect((await outbox.eventsAfter(1, 2)).map((r) => [r.seq, r.emailId, r.type])).toEqual([
      [2, 'e1', 'sent'],
      [3, 'e2', 'bounced'],
    ]);
    expect(await outbox.eventsAfter(0, 2)).toHaveLength(2);
    expect(await outbox.lastSeq()).toBe(4);
  });

  it('are pruned once control has them; seqs never go back, across a reopen too', async () => {
    await outbox.appendEvents([event('e1', 'sending'), event('e1', 'sent')]);
    expect(await outbox.prune(1)).toBe(1);
    expect(await outbox.countEvents()).toBe(1);
    outbox.close();
    outbox = Outbox.open(file, { synchronous: 'NORMAL' });
    expect((await outbox.eventsAfter(0, 10)).map((r) => r.seq)).toEqual([2]);
    expect((await outbox.appendEvent(event('e2', 'sending'))).seq).toBe(3);
  });

  it('nothing to append is no write', async () => {
    expect(await outbox.appendEvents([])).toEqual([]);
    expect(await outbox.lastSeq()).toBe(0);
  });
});

describe('Enqueue idempotency', () => {
  it('the first Enqueue of an id owns a pending row; a second sees it; Haraka’s copy makes it queued', async () => {
    expect(await outbox.beginEnqueue('e1')).toBeUndefined();
    expect(await outbox.beginEnqueue('e1')).toBe('pending');
    await outbox.markEnqueued(['e1']);
    expect(await outbox.beginEnqueue('e1')).toBe('queued');
    expect(await outbox.pendingEnqueues()).toEqual([]);
  });

  it('an event about an email proves Haraka had it: pending becomes queued in the same commit', async () => {
    await outbox.beginEnqueue('e1');
    await outbox.appendEvent(event('e1', 'sending'));
    expect(await outbox.getEnqueueState('e1')).toBe('queued');
  });

  it('after a crash the pending ids are found again; forgetting them lets a retried Enqueue send', async () => {
    await outbox.beginEnqueue('e1');
    await outbox.beginEnqueue('e2');
    await outbox.markEnqueued(['e2']);
    outbox.close();
    outbox = Outbox.open(file, { synchronous: 'NORMAL' });
    expect(await outbox.pendingEnqueues()).toEqual(['e1']);
    await outbox.forgetEnqueued(['e1']);
    expect(await outbox.beginEnqueue('e1')).toBeUndefined();
  });

  it('queued ids are forgotten after the idempotency window', async () => {
    await outbox.beginEnqueue('e1');
    await outbox.markEnqueued(['e1']);
    expect(await outbox.pruneEnqueued(Date.now() - 60_000)).toBe(0);
    expect(await outbox.pruneEnqueued(Date.now() + 1)).toBe(1);
    expect(await outbox.getEnqueueState('e1')).toBeUndefined();
  });
});

describe('warm-up counters and settings', () => {
  it('usage adds up per day, project and provider, and old days are dropped', async () => {
    await outbox.addUsage([
      { day: '2026-03-01', projectId: 'p1', provider: 'google', transactional: 1, bulk: 0 },
      { day: '2026-03-01', projectId: 'p1', provider: 'google', transactional: 2, bulk: 5 },
      { day: '2026-03-01', projectId: 'p2', provider: 'google', transactional: 0, bulk: 1 },
      { day: '2026-03-02', projectId: 'p1', provider: 'yahoo', transactional: 1, bulk: 1 },
    ]);
    const day = await outbox.usageOfDay('2026-03-01');
    expect(day.sort((a, b) => a.projectId.localeCompare(b.projectId))).toEqual([
      { day: '2026-03-01', projectId: 'p1', provider: 'google', transactional: 3, bulk: 5 },
      { day: '2026-03-01', projectId: 'p2', provider: 'google', transactional: 0, bulk: 1 },
    ]);
    expect(await outbox.pruneUsage('2026-03-02')).toBe(2);
    expect(await outbox.usageOfDay('2026-03-01')).toEqual([]);
    expect(await outbox.usageOfDay('2026-03-02')).toHaveLength(1);
  });

  it('settings are kept by name and replaced', async () => {
    expect(await outbox.setting('throttles')).toBeUndefined();
    await outbox.putSetting('throttles', '{"a":1}');
    await outbox.putSetting('throttles', '{"a":2}');
    expect(await outbox.setting('throttles')).toBe('{"a":2}');
  });
});
