import constants from 'haraka-constants';
import { describe, expect, it } from 'vitest';
import { useGatewayRuntime } from '../../helpers/gateway-runtime.js';
import type { BounceError, DeliveredParams, HMailItem } from '../../../gateway/haraka.js';

const g = useGatewayRuntime('postgate-event-hooks-');

const hmail = (emailId: string, rcpts = ['ann@inbox.test'], over: { failures?: number; notes?: Record<string, unknown> } = {}) =>
  ({
    filename: `file-${emailId}`,
    num_failures: over.failures ?? 0,
    notes: {},
    todo: {
      uuid: `uuid-${emailId}`,
      domain: 'inbox.test',
      queue_time: Date.now(),
      mail_from: { address: 'b@acme.test' },
      rcpt_to: rcpts.map((address) => ({ address })),
      notes: { email_id: emailId, ...over.notes },
    },
  }) as unknown as HMailItem;

/** Calls a hook and resolves with what it answered Haraka. */
const answer = (call: (next: (code?: number, msg?: unknown) => void) => void) =>
  new Promise<[number | undefined, unknown]>((resolve) => call((code, msg) => resolve([code, msg])));
const eventsOf = async (emailId: string) => (await g.rt.outbox.eventsAfter(0, 1000)).filter((e) => e.emailId === emailId);

describe('event hooks', () => {
  it('sending records a sending event per recipient, then lets the attempt go and counts it as under way', async () => {
    const h = hmail('em-sending', ['a@inbox.test', 'b@inbox.test']);
    expect(await answer((next) => g.hooks.sending(next, h))).toEqual([undefined, undefined]);
    expect((await eventsOf('em-sending')).map((e) => [e.type, e.recipient])).toEqual([
      ['sending', 'a@inbox.test'],
      ['sending', 'b@inbox.test'],
    ]);
    expect(g.rt.attempts.has('uuid-em-sending')).toBe(true);
  });

  it('sending that cannot be recorded delays the attempt by 30 s instead of sending unreported', async () => {
    const record = g.rt.record;
    g.rt.record = () => Promise.reject(new Error('disk full'));
    try {
      const h = hmail('em-unrecorded');
      expect(await answer((next) => g.hooks.sending(next, h))).toEqual([constants.delay, 30]);
      expect(g.rt.attempts.has('uuid-em-unrecorded')).toBe(false);
    } finally {
      g.rt.record = record;
    }
  });

  it('delivered records sent events, finishes the file when every recipient was accepted and ends the attempt', async () => {
    const h = hmail('em-all', ['a@inbox.test', 'b@inbox.test']);
    g.rt.attempts.add(h.todo.uuid);
    const params: DeliveredParams = ['mx.inbox.test', '192.0.2.5', '250 2.0.0 Ok', 0.1, 25, 'SMTP', h.todo.rcpt_to, false, false];
    expect(await answer((next) => g.hooks.delivered(next, h, params))).toEqual([undefined, undefined]);
    expect((await eventsOf('em-all')).map((e) => [e.type, e.recipient])).toEqual([
      ['sent', 'a@inbox.test'],
      ['sent', 'b@inbox.test'],
    ]);
    expect(await g.rt.outbox.finishedFiles()).toContain('file-em-all');
    expect(g.rt.attempts.has(h.todo.uuid)).toBe(false);
  });

  it('delivered to only some recipients leaves the file unfinished (the others were split off)', async () => {
    const h = hmail('em-some', ['a@inbox.test', 'b@inbox.test']);
    const params: DeliveredParams = ['mx.inbox.test', '192.0.2.5', '250 2.0.0 Ok', 0.1, 25, 'SMTP', [h.todo.rcpt_to[0]!], false, false];
    await answer((next) => g.hooks.delivered(next, h, params));
    expect((await eventsOf('em-some')).map((e) => e.recipient)).toEqual(['a@inbox.test']);
    expect(await g.rt.outbox.finishedFiles()).not.toContain('file-em-some');
  });

  it('deferred answers DENYSOFT with our retry schedule and records when the next attempt is', async () => {
    const before = Date.now();
    const h = hmail('em-deferred', ['a@inbox.test'], { failures: 2 });
    g.rt.attempts.add(h.todo.uuid);
    // Default schedule 60, 300, 900…: the second failure waits 300 s, whatever Haraka proposed.
    expect(await answer((next) => g.hooks.deferred(next, h, { delay: 5, err: 'Upstream error: 451 4.7.1 Try later' }))).toEqual([constants.denysoft, 300]);
    const [e] = await eventsOf('em-deferred');
    expect(e).toMatchObject({ type: 'deferred', recipient: 'a@inbox.test', cause: 'receiver', enhancedCode: '4.7.1' });
    expect(e!.nextAttemptMs).toBeGreaterThanOrEqual(before + 300_000);
    expect(e!.nextAttemptMs).toBeLessThan(Date.now() + 300_001);
    expect(g.rt.attempts.has(h.todo.uuid)).toBe(false);
    expect(await g.rt.outbox.finishedFiles()).not.toContain('file-em-deferred');
  });

  it('bounce records the bounce, finishes the file and answers OK (no DSN to the sender)', async () => {
    const h = hmail('em-bounce');
    const err = Object.assign(new Error('Upstream error: 550 5.1.1 No such user'), { mx: { exchange: '192.0.2.5', from_dns: 'mx.inbox.test' } }) as BounceError;
    expect(await answer((next) => g.hooks.bounce(next, h, err))).toEqual([constants.ok, undefined]);
    expect(await eventsOf('em-bounce')).toEqual([expect.objectContaining({ type: 'bounced', recipient: 'ann@inbox.test', enhancedCode: '5.1.1' })]);
    expect(await g.rt.outbox.finishedFiles()).toContain('file-em-bounce');
  });

  it('a refusal whose retries are used up is recorded as rejected and not put back', async () => {
    const h = hmail('em-rejected', ['a@inbox.test'], { failures: 3, notes: { reject_retries: 4 } });
    const err = new Error('Too many failures (451 4.7.1 Go away)') as BounceError;
    // outbound is {}: a requeue would fail and be logged, and nextAttemptMs set only after one succeeds.
    expect(await answer((next) => g.hooks.bounce(next, h, err))).toEqual([constants.ok, undefined]);
    const [e] = await eventsOf('em-rejected');
    expect(e).toMatchObject({ type: 'rejected', recipient: 'a@inbox.test', nextAttemptMs: 0 });
    expect(await g.rt.outbox.finishedFiles()).toContain('file-em-rejected');
  });

  it('a hook whose events cannot be written still answers Haraka (the outcome already happened)', async () => {
    const record = g.rt.record;
    g.rt.record = () => Promise.reject(new Error('disk full'));
    try {
      const h = hmail('em-lost', ['a@inbox.test'], { failures: 1 });
      expect(await answer((next) => g.hooks.deferred(next, h, { delay: 5, err: 'timeout' }))).toEqual([constants.denysoft, 60]);
      expect(await answer((next) => g.hooks.bounce(next, h, new Error('Upstream error: 550 5.1.1 nope') as BounceError))).toEqual([constants.ok, undefined]);
    } finally {
      g.rt.record = record;
    }
    expect(await eventsOf('em-lost')).toEqual([]);
  });
});
