import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { clock } from '../../../core/clock.js';
import type { HMailItem } from '../../../gateway/haraka.js';
import type { NewDeliveryEvent } from '../../../gateway/outbox/outbox.js';
import { PROVIDER } from '../../../gateway/outcome.js';
import { holdState, QueueState } from '../../../gateway/state/tracker.js';

let n = 0;
const item = (domain: string, projectId = 'p1', notes: Record<string, unknown> = {}) =>
  ({
    filename: `f${++n}`,
    notes: {},
    todo: { uuid: `u${n}`, domain, rcpt_to: [{ address: `a@${domain}` }], notes: { project_id: projectId, ...notes } },
  }) as unknown as HMailItem;

const ev = (type: NewDeliveryEvent['type'], over: Partial<NewDeliveryEvent> = {}): NewDeliveryEvent => ({
  emailId: 'em_1',
  type,
  recipient: 'a@gmail.com',
  atMs: clock.now(),
  mx: '',
  response: '',
  attempt: 1,
  enhancedCode: '',
  nextAttemptMs: 0,
  cause: '',
  ...over,
});

const only = (s: QueueState, provider: string, projectId: string) => [...s.counts()].find((c) => c.provider === provider && c.projectId === projectId)?.queue;

describe('QueueState', () => {
  afterEach(() => clock.setOffset(0));

  it('moves one count per change: queued, decided, held, sending, deferred, finished', () => {
    const s = new QueueState();
    const h = item('gmail.com');
    s.queued(h);
    expect(only(s, 'google', 'p1')).toMatchObject({ ready: 1, inFlight: 0 });
    s.deferred(h, holdState('limit'), 'google');
    expect(only(s, 'google', 'p1')).toMatchObject({ ready: 0, deferred: { pacing: 1 } });
    s.queued(h);
    s.decided(h, 'google');
    s.sending(h);
    expect(only(s, 'google', 'p1')).toMatchObject({ ready: 0, inFlight: 1, deferred: { pacing: 0 } });
    s.deferred(h, 'receiver');
    expect(only(s, 'google', 'p1')).toMatchObject({ inFlight: 0, deferred: { receiver: 1 } });
    // Haraka renames the file after a deferral: the item is the same object.
    (h as { filename: string }).filename = 'renamed';
    s.queued(h);
    expect(only(s, 'google', 'p1')).toMatchObject({ ready: 1, deferred: { receiver: 0 } });
    expect(s.size).toBe(1);
    s.forget(h);
    expect(s.size).toBe(0);
    expect([...s.counts()]).toEqual([]);
    s.forget(h);
    expect(s.size).toBe(0);
  });

  it('names the causes of the Pacer holds', () => {
    expect(['warmup', 'retry', 'limit', 'shaping', 'suspended'].map((k) => holdState(k as never))).toEqual([
      'volume',
      'receiver',
      'pacing',
      'shaping',
      'suspended',
    ]);
  });

  it("files an item under its domain's provider until the pacing hook finds one by MX, then remembers the domain", () => {
    const s = new QueueState((name) => (['google', 'microsoft', 'other'].includes(name) ? name : 'other'));
    const a = item('corp.example');
    s.queued(a);
    expect(only(s, 'other', 'p1')?.ready).toBe(1);
    s.decided(a, 'google');
    expect(only(s, 'other', 'p1')).toBeUndefined();
    expect(only(s, 'google', 'p1')?.ready).toBe(1);
    const b = item('corp.example', 'p2');
    s.queued(b);
    expect(only(s, 'google', 'p2')?.ready).toBe(1);
    // A gate other:<domain> or an unknown name is labelled other.
    const c = item('x.test');
    s.deferred(c, 'network', 'other:x.test');
    expect(only(s, 'other', 'p1')?.deferred.network).toBe(1);
  });

  it('waits for the todo of an item loaded at start', () => {
    const s = new QueueState();
    const h = Object.assign(new EventEmitter(), { filename: 'f', notes: {}, todo: null }) as unknown as HMailItem & EventEmitter;
    s.queued(h);
    expect(s.size).toBe(0);
    (h as { todo: unknown }).todo = { uuid: 'u', domain: 'yahoo.com', rcpt_to: [], notes: { project_id: 'p9' } };
    h.emit('ready');
    expect(only(s, 'yahoo', 'p9')?.ready).toBe(1);
  });

  it('finds items by provider, project and state without looking at others', () => {
    const s = new QueueState();
    const a = item('gmail.com', 'p1');
    const b = item('gmail.com', 'p2');
    const c = item('outlook.com', 'p1');
    for (const h of [a, b, c]) s.queued(h);
    s.deferred(b, 'suspended');
    s.sending(c);
    expect([...s.itemsWhere({ projectId: 'p1' })].sort()).toEqual([a, c].sort());
    expect([...s.itemsWhere({ provider: 'google' })]).toHaveLength(2);
    expect([...s.itemsWhere({ provider: 'google', states: ['deferred'] })]).toEqual([b]);
    expect([...s.itemsWhere({ states: ['suspended', 'in_flight'] })]).toHaveLength(2);
    expect([...s.itemsWhere({})]).toHaveLength(3);
    // forget() while iterating is safe (a cancel drops as it goes).
    for (const h of s.itemsWhere({})) s.forget(h);
    expect(s.size).toBe(0);
  });

  it('sums per provider for the metrics', () => {
    const s = new QueueState();
    s.queued(item('gmail.com', 'p1'));
    const h = item('gmail.com', 'p2');
    s.deferred(h, 'volume');
    expect(s.byProvider()).toEqual([{ provider: 'google', ready: 1, inFlight: 0, held: 0, deferred: expect.objectContaining({ volume: 1 }) }]);
  });

  it('counts outcomes in 5 min, hour and day windows, and forgets what is older', () => {
    const s = new QueueState();
    const now = clock.now();
    s.outcome('google', 'p1', 'delivered', 2, now);
    s.outcome('google', 'p1', 'bounced', 1, now - 10 * 60_000);
    s.outcome('google', 'p1', 'deferred', 1, now - 3 * 3600_000);
    s.outcome('google', 'p1', 'complained', 1, now - 30 * 3600_000);
    const w = s.windows(now).get('google\tp1')!;
    expect(w.last5m).toEqual({ delivered: 2, deferred: 0, bounced: 0, complained: 0 });
    expect(w.lastHour).toEqual({ delivered: 2, deferred: 0, bounced: 1, complained: 0 });
    expect(w.lastDay).toEqual({ delivered: 2, deferred: 1, bounced: 1, complained: 0 });
    // An hour later, the minute buckets have nothing left.
    expect(s.windows(now + 3600_000).get('google\tp1')?.lastHour).toEqual({ delivered: 0, deferred: 0, bounced: 0, complained: 0 });
  });

  it('keeps memory bounded: minute and hour buckets roll over', () => {
    const s = new QueueState();
    const start = clock.now();
    for (let m = 0; m < 3 * 24 * 60; m += 7) s.outcome('google', 'p1', 'delivered', 1, start + m * 60_000);
    const internal = s as unknown as { minutes: Map<number, unknown>; hours: Map<number, unknown> };
    expect(internal.minutes.size).toBeLessThanOrEqual(60);
    expect(internal.hours.size).toBeLessThanOrEqual(24);
  });

  it('groups the receiver answers by enhanced code over the last hour, with a sample, from the attempt events', () => {
    const s = new QueueState();
    const h = item('gmail.com');
    h.notes[PROVIDER] = 'google';
    const t0 = clock.now();
    s.observe(
      [
        ev('deferred', { cause: 'receiver', enhancedCode: '4.7.28', response: '421-4.7.28 unusual rate', atMs: t0 }),
        ev('deferred', { cause: 'receiver', enhancedCode: '4.7.28', response: '421-4.7.28 unusual rate (2)', atMs: t0 }),
        ev('deferred', { cause: 'network', response: 'connection refused' }),
        ev('rejected', { cause: 'receiver', enhancedCode: '5.7.1', response: '550 5.7.1 no' }),
        ev('sent', {}),
      ],
      h,
    );
    const answers = s.answersOf('google');
    expect(answers.map((a) => [a.enhancedCode, a.count, a.sample])).toEqual([
      ['4.7.28', 2, '421-4.7.28 unusual rate (2)'],
      ['5.7.1', 1, '550 5.7.1 no'],
    ]);
    const w = s.windows().get('google\tp1')!;
    expect(w.last5m).toEqual({ delivered: 1, deferred: 3, bounced: 1, complained: 0 });
    expect(s.answersOf('google', t0 + 2 * 3600_000)).toEqual([]);
  });

  it('saves its windows, answers and warm-up starts and takes them back (a restart); a broken text is ignored', () => {
    const s = new QueueState();
    const now = clock.now();
    s.outcome('google', 'p1', 'delivered', 2, now);
    s.outcome('google', 'p1', 'bounced', 1, now - 3 * 3600_000);
    s.answer('google', '4.7.28', '421-4.7.28 slow', now);
    s.queued(item('gmail.com', 'p7', { warmup_start: 123 }));
    const before = s.revision;
    const json = s.save()!;
    const t = new QueueState();
    t.restore(json);
    expect(t.windows(now)).toEqual(s.windows(now));
    expect(t.answersOf('google', now)).toEqual(s.answersOf('google', now));
    expect(t.warmupStart.get('p7')).toBe(123);
    // Queue counts are not part of it: the queue is counted again as it loads.
    expect(t.size).toBe(0);
    expect(before).toBe(3);
    expect(s.save(10)).toBeUndefined();
    const u = new QueueState();
    u.restore('{"minutes": 5');
    expect(u.windows(now).size).toBe(0);
  });

  it('counts an inbound complaint under the provider of its recipient', () => {
    const s = new QueueState();
    s.observe([ev('complained', { recipient: 'x@yahoo.com' })]);
    expect(s.windows().get('yahoo\t')?.lastHour.complained).toBe(1);
  });

  it("keeps the oldest accepted time of each provider and project's items, found again once the oldest leaves", () => {
    const s = new QueueState();
    const oldest = () => [...s.counts()].map((c) => [c.provider, c.projectId, c.oldestAcceptedMs]);
    const a = item('gmail.com', 'p1', { accepted_ms: 3_000 });
    const b = item('gmail.com', 'p1', { accepted_ms: 1_000 });
    const c = item('gmail.com', 'p1', { accepted_ms: 2_000 });
    const unknown = item('gmail.com', 'p1');
    for (const h of [a, b, c, unknown]) s.queued(h);
    expect(oldest()).toEqual([['google', 'p1', 1_000]]);
    s.forget(b);
    expect(oldest()).toEqual([['google', 'p1', 2_000]]);
    // Moving to another provider (its MX named one) takes its time along.
    s.decided(c, 'microsoft');
    expect(oldest()).toEqual([
      ['google', 'p1', 3_000],
      ['microsoft', 'p1', 2_000],
    ]);
    s.forget(a);
    expect(oldest()).toEqual([
      ['google', 'p1', 0],
      ['microsoft', 'p1', 2_000],
    ]);
  });

  it('gives every outcome of the last hour by the minute and of the last day by the hour, oldest bucket first', () => {
    const s = new QueueState();
    const now = Date.UTC(2030, 0, 1, 12, 30, 15);
    s.outcome('google', 'p1', 'delivered', 2, now);
    s.outcome('yahoo', 'p2', 'delivered', 1, now - 10_000);
    s.outcome('google', 'p1', 'bounced', 1, now - 60_000);
    s.outcome('google', 'p1', 'deferred', 1, now - 2 * 3600_000);
    // Past both windows: in no bucket.
    s.outcome('google', 'p1', 'complained', 1, now - 25 * 3600_000);
    const x = s.series(now);
    expect(x.minute.startMs).toBe(Date.UTC(2030, 0, 1, 11, 31));
    expect(x.minute.delivered).toHaveLength(60);
    expect(x.minute.delivered[59]).toBe(3);
    expect(x.minute.bounced[58]).toBe(1);
    expect(x.minute.deferred.reduce((a, b) => a + b)).toBe(0);
    expect(x.hour.startMs).toBe(Date.UTC(2029, 11, 31, 13));
    expect(x.hour.delivered[23]).toBe(3);
    expect(x.hour.bounced[23]).toBe(1);
    expect(x.hour.deferred[21]).toBe(1);
    expect(x.hour.complained.reduce((a, b) => a + b)).toBe(0);
  });
});
