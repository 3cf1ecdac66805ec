// The email lifecycle's semantics as tables, with no database: what each intent changes given
// the state a backend loaded. Persistence and races are the store conformance suite's.
import { describe, expect, it } from 'vitest';
import { DAY_MS, dayOf } from '../../../core/clock.js';
import {
  accept,
  applyEvents,
  cancel,
  cancelOpen,
  type Endpoint,
  emailsToLoad,
  eventKey,
  type LoadedCounts,
  type LoadedEmail,
  release,
  releasing,
  requestsToRead,
  reschedule,
  screen,
  suppressionLookups,
  toRecord,
  unsubscribe,
  webhookMessages,
} from '../../../control/mail/lifecycle.js';
import type { AcceptGuards, GatewayEvent, NewEmail, SuppressionScope } from '../../../control/mail/vocabulary.js';

const NOW = Date.UTC(2025, 5, 10, 12);
const TODAY = dayOf(NOW);
const request = (to: string[]) =>
  JSON.stringify({ from: 'a@acme.test', to, cc: [], bcc: [], reply_to: [], subject: 'Hi', text: 't', tags: ['t1'], headers: {}, bulk: false });

const newEmail = (o: Partial<NewEmail> = {}): NewEmail => ({
  id: 'e1',
  projectId: 'p1',
  status: 'queued',
  from: 'a@acme.test',
  subject: 'Hi',
  bulk: false,
  request: request(['x@inbox.test', 'y@inbox.test']),
  createdAt: NOW,
  recipients: [
    { address: 'x@inbox.test', kind: 'to' },
    { address: 'y@inbox.test', kind: 'cc' },
  ],
  ...o,
});

const everything: Endpoint = { id: 'w-all', statuses: [], enabled: true };
const onlySent: Endpoint = { id: 'w-sent', statuses: ['sent'], enabled: true };
const disabled: Endpoint = { id: 'w-off', statuses: [], enabled: false };
const HOOKS = [everything, onlySent, disabled];

const quota = { daily: 10, monthly: 100 };
const bulkRules = { subjectLimit: 5, spike: { factor: 3, floor: 4, days: 7 } };

/** Screens and accepts in one go (no suppression list unless given). */
const accepted = (e: NewEmail, guards: AcceptGuards = {}, counts: LoadedCounts = {}, scopes: Record<string, SuppressionScope> = {}) =>
  accept(screen(e, guards, new Map(Object.entries(scopes))), counts, HOOKS);

describe('accept', () => {
  it('records a queued email: its row, each recipient once at its position, its first event, its status counted, a message for each endpoint that wants it', () => {
    const e = newEmail({
      recipients: [
        { address: 'x@inbox.test', kind: 'to' },
        { address: 'x@inbox.test', kind: 'cc' },
        { address: 'y@inbox.test', kind: 'bcc' },
      ],
      attachments: [Buffer.from('pdf')],
    });
    const { outcome, changes } = accepted(e);
    expect(outcome).toEqual({ kind: 'accepted' });
    expect(changes.inserts).toHaveLength(1);
    const row = changes.inserts[0]!;
    expect(row).toMatchObject({ id: 'e1', status: 'queued', reached: 'queued', held: null, error: null, system: false, scheduledAt: null });
    expect(row.recipients).toEqual([
      { address: 'x@inbox.test', kind: 'to', status: 'queued', position: 0 },
      { address: 'y@inbox.test', kind: 'bcc', status: 'queued', position: 1 },
    ]);
    expect(row.attachments).toEqual([Buffer.from('pdf')]);
    expect(changes.events).toEqual([{ emailId: 'e1', type: 'queued', recipient: '', attempt: 0, at: NOW, details: null, dedupe: '' }]);
    expect(changes.statuses).toEqual([{ projectId: 'p1', day: TODAY, status: 'queued' }]);
    expect(changes.usage).toEqual([]);
    expect(changes.webhooks).toEqual([
      {
        webhookIds: ['w-all'],
        email: expect.objectContaining({ id: 'e1', request: e.request }),
        status: 'queued',
        at: NOW,
        event: { type: 'queued', at: NOW },
      },
    ]);
  });

  it.each([
    ['queued', { quota }, true, 'queued'],
    ['scheduled', { quota }, false, 'scheduled'],
    ['failed', { quota }, false, 'failed'],
    ['queued', {}, false, 'queued'],
  ] as const)('a %s email with guards %j: usage counted %s; status %s counted', (status, guards, counted, counts) => {
    const e = newEmail({ status, ...(status === 'scheduled' ? { scheduledAt: NOW + DAY_MS } : {}) });
    const s = screen(e, guards);
    expect(s.quota).toBe(counted);
    const { changes } = accept(s, { usage: { day: 0, month: 0 } }, []);
    expect(changes.usage).toEqual(counted ? [{ projectId: 'p1', day: TODAY }] : []);
    expect(changes.statuses.map((x) => x.status)).toEqual([counts]);
  });

  it('an email refused at ingestion keeps its error in its first event, its recipients failed, and none of its files', () => {
    const e = newEmail({ status: 'failed', error: 'Domain not verified', errorCode: 'DOMAIN_NOT_VERIFIED', attachments: [Buffer.from('x')] });
    const { changes } = accepted(e, { suppressions: true, quota });
    const row = changes.inserts[0]!;
    expect(row.recipients.map((r) => r.status)).toEqual(['failed', 'failed']);
    expect(row.attachments).toEqual([]);
    expect(row).toMatchObject({ error: 'Domain not verified', errorCode: 'DOMAIN_NOT_VERIFIED' });
    expect(changes.events).toEqual([expect.objectContaining({ type: 'failed', details: { reason: 'Domain not verified', code: 'DOMAIN_NOT_VERIFIED' } })]);
    expect(changes.webhooks[0]!.event).toEqual({ type: 'failed', at: NOW, reason: 'Domain not verified', code: 'DOMAIN_NOT_VERIFIED' });
    // A refused email is not checked against the suppression list.
    expect(suppressionLookups(e, { suppressions: true })).toEqual([]);
  });

  it.each([
    // scope of x, bulk email, x's status and reason, outcome
    [undefined, false, 'queued', undefined, 'accepted'],
    ['all', false, 'failed', 'suppressed', 'accepted'],
    ['bulk', true, 'failed', 'unsubscribed', 'accepted'],
    ['bulk', false, 'queued', undefined, 'accepted'],
  ] as const)('suppression scope %s on a bulk=%s email: x is %s (%s)', (scope, bulk, status, reason, kind) => {
    const e = newEmail({ bulk });
    expect(suppressionLookups(e, {})).toEqual([]);
    expect(suppressionLookups(e, { suppressions: true })).toEqual(['x@inbox.test', 'y@inbox.test']);
    const { outcome, changes } = accepted(e, { suppressions: true }, {}, scope ? { 'x@inbox.test': scope } : {});
    expect(outcome.kind).toBe(kind);
    expect(changes.inserts[0]!.recipients[0]!.status).toBe(status);
    const left = changes.events.filter((ev) => ev.recipient === 'x@inbox.test');
    expect(left).toEqual(reason ? [expect.objectContaining({ type: 'failed', details: { reason } })] : []);
  });

  it('every recipient suppressed: recorded failed with the suppression error, not judged by the quota, outcome suppressed', () => {
    const e = newEmail();
    const s = screen(
      e,
      { suppressions: true, quota },
      new Map([
        ['x@inbox.test', 'all'],
        ['y@inbox.test', 'all'],
      ]),
    );
    expect(s.quota).toBe(false);
    const { outcome, changes } = accept(s, {}, HOOKS);
    expect(outcome).toEqual({ kind: 'suppressed' });
    expect(changes.inserts[0]).toMatchObject({ status: 'failed', errorCode: 'RECIPIENT_IN_SUPPRESSION_LIST' });
    expect(changes.usage).toEqual([]);
  });

  it.each([
    [{ day: 9, month: 50 }, { kind: 'accepted' }],
    [
      { day: 10, month: 50 },
      { kind: 'quota', period: 'daily', limit: 10 },
    ],
    [
      { day: 0, month: 100 },
      { kind: 'quota', period: 'monthly', limit: 100 },
    ],
  ])('the quota with usage %j: %j; a refusal records nothing', (usage, outcome) => {
    const r = accepted(newEmail(), { quota }, { usage });
    expect(r.outcome).toEqual(outcome);
    if (outcome.kind !== 'accepted') expect(Object.values(r.changes).every((list) => list.length === 0)).toBe(true);
  });

  it.each([
    // same subject today, bulk today, previous 7 days together, allowance → outcome
    [{ sameSubjectToday: 3, today: 0, previousDays: 0, allowance: 0 }, 'accepted'],
    [{ sameSubjectToday: 4, today: 0, previousDays: 0, allowance: 0 }, 'bulk-subject'],
    [{ sameSubjectToday: 0, today: 3, previousDays: 0, allowance: 0 }, 'held'],
    [{ sameSubjectToday: 0, today: 3, previousDays: 14, allowance: 0 }, 'accepted'],
    [{ sameSubjectToday: 0, today: 3, previousDays: 0, allowance: 5 }, 'accepted'],
  ])('bulk counts %j: %s', (bulk, expected) => {
    const e = newEmail({ bulk: true, subject: '  HI ' });
    const s = screen(e, { bulk: bulkRules });
    expect(s.bulk).toMatchObject({ since: dayOf(NOW - 7 * DAY_MS), days: 7, recipients: 2 });
    expect(s.bulk!.subjectHash).toBe(screen(newEmail({ bulk: true, subject: 'hi' }), { bulk: bulkRules }).bulk!.subjectHash);
    const { outcome, changes } = accept(s, { bulk }, HOOKS);
    if (expected === 'bulk-subject') {
      expect(outcome).toEqual({ kind: 'bulk-subject', limit: 5, sentToday: 4 });
      return;
    }
    expect(changes.bulk).toEqual([{ projectId: 'p1', day: TODAY, subjectHash: s.bulk!.subjectHash, recipients: 2 }]);
    if (expected === 'accepted') {
      expect(outcome).toEqual({ kind: 'accepted' });
      expect(changes.inserts[0]!.held).toBeNull();
      return;
    }
    // Held: recorded, kept from the gateways, and the delay shown as a deferral of its own.
    expect(outcome).toMatchObject({ kind: 'accepted', held: expect.stringContaining('bulk volume today (5)') });
    const held = (outcome as { held: string }).held;
    expect(changes.inserts[0]!.held).toBe(held);
    expect(changes.events.at(-1)).toEqual({
      emailId: 'e1',
      type: 'deferred',
      recipient: '',
      attempt: 0,
      at: NOW,
      details: { cause: 'volume', reason: held },
      dedupe: 'volume',
    });
    expect(changes.webhooks.map((w) => [w.status, w.event.type])).toEqual([
      ['queued', 'queued'],
      ['queued', 'deferred'],
    ]);
  });

  it('a bulk email refused by the quota adds no bulk count; a scheduled one reads no counter', () => {
    const r = accepted(
      newEmail({ bulk: true }),
      { quota, bulk: bulkRules },
      { usage: { day: 10, month: 10 }, bulk: { sameSubjectToday: 0, today: 0, previousDays: 0, allowance: 0 } },
    );
    expect(r.outcome.kind).toBe('quota');
    expect(r.changes.bulk).toEqual([]);
    const s = screen(newEmail({ bulk: true, status: 'scheduled', scheduledAt: NOW + 1 }), { quota, bulk: bulkRules });
    expect([s.quota, s.bulk]).toEqual([false, undefined]);
  });

  it('a partly refused email says which recipients were left out, and why', () => {
    const e = newEmail({
      recipients: [
        { address: 'x@inbox.test', kind: 'to' },
        { address: 'y@inbox.test', kind: 'to', status: 'failed' },
      ],
    });
    const { changes } = accepted(e);
    expect(changes.events.map((ev) => [ev.type, ev.recipient, ev.details])).toEqual([
      ['queued', '', null],
      ['failed', 'y@inbox.test', { reason: 'refused' }],
    ]);
  });
});

const loaded = (o: Partial<LoadedEmail> = {}): LoadedEmail => ({
  id: 'e1',
  projectId: 'p1',
  status: 'scheduled',
  bulk: false,
  reached: 'scheduled',
  from: 'a@acme.test',
  subject: 'Hi',
  createdAt: NOW - DAY_MS,
  request: request(['x@inbox.test', 'y@inbox.test']),
  recipients: [
    { address: 'x@inbox.test', kind: 'to', status: 'queued' },
    { address: 'y@inbox.test', kind: 'to', status: 'failed' },
  ],
  ...o,
});

describe('release, reschedule, cancel', () => {
  it('only a scheduled email is released; it is judged as a queued email leaving now (not on its day of acceptance), suppressions not again', () => {
    expect(releasing(undefined, { quota }, NOW)).toBeUndefined();
    expect(releasing(loaded({ status: 'queued' }), { quota }, NOW)).toBeUndefined();
    const s = releasing(loaded(), { quota, suppressions: true }, NOW + DAY_MS)!;
    expect(s).toMatchObject({ day: dayOf(NOW + DAY_MS), quota: true, guards: { suppressions: false } });
    expect(s.email).toMatchObject({ status: 'queued', createdAt: NOW + DAY_MS });
    expect(s.email.recipients).toEqual([
      { address: 'x@inbox.test', kind: 'to' },
      { address: 'y@inbox.test', kind: 'to', status: 'failed' },
    ]);
  });

  it('released: queued (errors cleared), counted on the day it leaves, its queued event; the message names the time it was accepted', () => {
    const email = loaded();
    const s = releasing(email, { quota }, NOW)!;
    const { outcome, changes } = release(email, s, { usage: { day: 0, month: 0 } }, HOOKS, NOW);
    expect(outcome).toEqual({ kind: 'accepted' });
    expect(changes.emails).toEqual([{ id: 'e1', updatedAt: NOW, status: 'queued', reached: 'scheduled,queued', error: null, errorCode: null, held: null }]);
    expect(changes.recipients).toEqual([]);
    expect(changes.events.map((e) => e.type)).toEqual(['queued']);
    expect(changes.usage).toEqual([{ projectId: 'p1', day: TODAY }]);
    expect(changes.statuses).toEqual([{ projectId: 'p1', day: TODAY, status: 'queued' }]);
    expect(changes.webhooks[0]!.email).toMatchObject({ createdAt: NOW - DAY_MS, request: email.request });
  });

  it('refused when due: failed with the refusal as its error, its queued recipients failed, nothing counted against the quota', () => {
    const email = loaded({ reached: 'scheduled,failed' });
    const s = releasing(email, { quota }, NOW)!;
    const { outcome, changes } = release(email, s, { usage: { day: 10, month: 10 } }, HOOKS, NOW);
    expect(outcome).toEqual({ kind: 'quota', period: 'daily', limit: 10 });
    const reason = 'The daily quota of 10 emails is used up';
    expect(changes.emails).toEqual([{ id: 'e1', updatedAt: NOW, status: 'failed', reached: 'scheduled,failed', error: reason, errorCode: 'QUOTA_EXCEEDED' }]);
    expect(changes.recipients).toEqual([{ emailId: 'e1', address: 'x@inbox.test', status: 'failed', at: NOW }]);
    expect(changes.events).toEqual([expect.objectContaining({ type: 'failed', details: { reason, code: 'QUOTA_EXCEEDED' } })]);
    // It had reached failed before: not counted again, but still sent to the endpoints.
    expect(changes.statuses).toEqual([]);
    expect(changes.usage).toEqual([]);
    expect(changes.webhooks.map((w) => w.status)).toEqual(['failed']);
  });

  it('released into a bulk spike: queued but held, with its deferral', () => {
    const email = loaded({ bulk: true });
    const s = releasing(email, { bulk: bulkRules }, NOW)!;
    const { outcome, changes } = release(email, s, { bulk: { sameSubjectToday: 0, today: 10, previousDays: 0, allowance: 0 } }, HOOKS, NOW);
    expect(outcome).toMatchObject({ kind: 'accepted', held: expect.any(String) });
    expect(changes.emails[0]!.held).toBe((outcome as { held: string }).held);
    expect(changes.events.map((e) => [e.type, e.dedupe])).toEqual([
      ['queued', ''],
      ['deferred', 'volume'],
    ]);
    expect(changes.bulk).toEqual([expect.objectContaining({ recipients: 1 })]);
  });

  it.each([
    ['no such email', undefined, { kind: 'not_found' }],
    ['a queued email', loaded({ status: 'queued' }), { kind: 'not_scheduled', status: 'queued' }],
    ['a canceled email', loaded({ status: 'canceled' }), { kind: 'not_scheduled', status: 'canceled' }],
  ])('reschedule and cancel of %s: %j, nothing changed', (_name, email, outcome) => {
    for (const d of [reschedule(email, NOW + DAY_MS, NOW), cancel(email, HOOKS, NOW)]) {
      expect(d.outcome).toEqual(outcome);
      expect(Object.values(d.changes).every((list) => list.length === 0)).toBe(true);
    }
  });

  it('reschedule moves the time; each move is its own event', () => {
    const { outcome, changes } = reschedule(loaded(), NOW + DAY_MS, NOW);
    expect(outcome).toEqual({ kind: 'done' });
    expect(changes.emails).toEqual([{ id: 'e1', updatedAt: NOW, scheduledAt: NOW + DAY_MS }]);
    expect(changes.events).toEqual([
      expect.objectContaining({ type: 'rescheduled', details: { scheduled_at: new Date(NOW + DAY_MS).toISOString() }, dedupe: String(NOW) }),
    ]);
    expect(changes.webhooks).toEqual([]);
  });

  it('cancel: canceled with its queued recipients, counted, sent to the endpoints', () => {
    const { outcome, changes } = cancel(loaded(), HOOKS, NOW);
    expect(outcome).toEqual({ kind: 'done' });
    expect(changes.emails).toEqual([{ id: 'e1', updatedAt: NOW, status: 'canceled', reached: 'scheduled,canceled' }]);
    expect(changes.recipients).toEqual([{ emailId: 'e1', address: 'x@inbox.test', status: 'canceled', at: NOW }]);
    expect(changes.events.map((e) => e.type)).toEqual(['canceled']);
    expect(changes.statuses).toEqual([{ projectId: 'p1', day: TODAY, status: 'canceled' }]);
    expect(changes.webhooks.map((w) => w.webhookIds)).toEqual([['w-all']]);
  });
});

describe("an operator's cancel of a project's mail (cancelOpen)", () => {
  it('queued, scheduled and deferred (sending) emails are canceled with their unanswered recipients, an event, a count and webhook messages', () => {
    const emails = [
      loaded({ id: 'q', status: 'queued', reached: 'queued' }),
      loaded({ id: 's' }),
      loaded({
        id: 'd',
        status: 'sending',
        reached: 'queued,sending',
        recipients: [
          { address: 'x@inbox.test', kind: 'to', status: 'sending' },
          { address: 'y@inbox.test', kind: 'to', status: 'rejected' },
        ],
      }),
    ];
    const { outcome, changes } = cancelOpen(emails, HOOKS, NOW);
    expect(outcome).toBe(3);
    expect(changes.emails).toEqual([
      { id: 'q', updatedAt: NOW, status: 'canceled', reached: 'queued,canceled' },
      { id: 's', updatedAt: NOW, status: 'canceled', reached: 'scheduled,canceled' },
      { id: 'd', updatedAt: NOW, status: 'canceled', reached: 'queued,sending,canceled' },
    ]);
    // Refused (failed) and answered (rejected) recipients keep what they had.
    expect(changes.recipients).toEqual(['q', 's', 'd'].map((emailId) => ({ emailId, address: 'x@inbox.test', status: 'canceled', at: NOW })));
    expect(changes.events).toEqual(
      ['q', 's', 'd'].map((emailId) => expect.objectContaining({ emailId, type: 'canceled', recipient: '', details: { reason: 'operator' } })),
    );
    expect(changes.statuses).toEqual(Array(3).fill({ projectId: 'p1', day: TODAY, status: 'canceled' }));
    expect(changes.webhooks.map((w) => [w.email.id, w.status, w.event])).toEqual(
      ['q', 's', 'd'].map((id) => [id, 'canceled', { type: 'canceled', at: NOW, reason: 'operator' }]),
    );
  });

  it('an email already final is left alone; one partly delivered keeps its sent status, its open recipients canceled', () => {
    const emails = [
      loaded({ id: 'done', status: 'delivered', reached: 'queued,sending,sent,delivered' }),
      loaded({ id: 'gone', status: 'canceled', reached: 'scheduled,canceled' }),
      loaded({
        id: 'half',
        status: 'sending',
        reached: 'queued,sending',
        recipients: [
          { address: 'x@inbox.test', kind: 'to', status: 'sent' },
          { address: 'y@inbox.test', kind: 'to', status: 'queued' },
        ],
      }),
    ];
    const { outcome, changes } = cancelOpen(emails, HOOKS, NOW);
    expect(outcome).toBe(1);
    expect(changes.emails).toEqual([{ id: 'half', updatedAt: NOW, status: 'sent', reached: 'queued,sending,sent' }]);
    expect(changes.recipients).toEqual([{ emailId: 'half', address: 'y@inbox.test', status: 'canceled', at: NOW }]);
    expect(changes.events.map((e) => [e.emailId, e.type])).toEqual([['half', 'canceled']]);
  });

  it('a copy on the wire when canceled takes the receiver answer afterwards; the email shows it', () => {
    const email = loaded({ id: 'w', status: 'sending', reached: 'queued,sending', recipients: [{ address: 'x@inbox.test', kind: 'to', status: 'sending' }] });
    const canceled = cancelOpen([email], HOOKS, NOW).changes;
    expect(canceled.emails[0]).toMatchObject({ status: 'canceled' });
    const after = loaded({
      ...email,
      status: 'canceled',
      reached: 'queued,sending,canceled',
      recipients: [{ address: 'x@inbox.test', kind: 'to', status: 'canceled' }],
    });
    const sent: GatewayEvent = { seq: 1, emailId: 'w', type: 'sent', recipient: 'x@inbox.test', at: NOW + 1, attempt: 1, details: {} };
    const { changes } = applyEvents({ emails: new Map([['w', after]]), hooks: new Map() }, [sent], new Set([eventKey(sent)]));
    expect(changes.recipients).toEqual([{ emailId: 'w', address: 'x@inbox.test', status: 'sent', at: NOW + 1 }]);
    expect(changes.emails).toEqual([{ id: 'w', updatedAt: NOW + 1, status: 'sent', reached: 'queued,sending,canceled,sent' }]);
  });
});

describe('unsubscribe', () => {
  it('suppresses the address for bulk mail and shows an unsubscribed event (the log and the list keep the first)', () => {
    const c = unsubscribe({ projectId: 'p1', emailId: 'e1', address: 'x@inbox.test', source: 'one-click', at: NOW });
    expect(c.suppressions).toEqual([{ projectId: 'p1', address: 'x@inbox.test', reason: 'unsubscribed', scope: 'bulk', emailId: 'e1', at: NOW }]);
    expect(c.events).toEqual([
      { emailId: 'e1', type: 'unsubscribed', recipient: 'x@inbox.test', attempt: 0, at: NOW, details: { source: 'one-click' }, dedupe: '' },
    ]);
    expect([c.emails, c.recipients, c.statuses, c.webhooks]).toEqual([[], [], [], []]);
  });
});

describe('delivery events', () => {
  const sent = (o: Partial<LoadedEmail> = {}) =>
    loaded({
      status: 'queued',
      reached: 'queued',
      recipients: [
        { address: 'x@inbox.test', kind: 'to', status: 'queued' },
        { address: 'y@inbox.test', kind: 'to', status: 'queued' },
      ],
      request: undefined,
      ...o,
    });
  const ev = (seq: number, type: GatewayEvent['type'], recipient: string, o: Partial<GatewayEvent> = {}): GatewayEvent => ({
    seq,
    emailId: 'e1',
    type,
    recipient,
    at: NOW + seq,
    attempt: 1,
    details: {},
    ...o,
  });
  /** Records every event as new (the first of each key), then applies them. */
  const run = (events: GatewayEvent[], email = sent(), hooks: Endpoint[] = HOOKS) => {
    const emails = new Map([[email.id, email]]);
    const { events: recorded } = toRecord(events, 0, emails);
    return applyEvents({ emails, hooks: new Map([['p1', hooks]]) }, recorded, new Set(recorded.map(eventKey)));
  };

  it('what the log records: events past the cursor, of emails that exist, a report by position given its recipient', () => {
    const emails = new Map([['e1', sent()]]);
    const events = [
      ev(1, 'sent', 'x@inbox.test'),
      ev(2, 'sent', 'x@inbox.test'),
      ev(3, 'sent', 'x@inbox.test', { emailId: 'gone' }),
      ev(4, 'bounced', '', { recipientIndex: 1 }),
      ev(5, 'bounced', '', { recipientIndex: 2 }),
      ev(6, 'complained', '', { recipientIndex: 0, soleRecipient: true }),
      ev(7, 'sent', 'y@inbox.test', { emailId: '' }),
    ];
    expect(emailsToLoad(events, 1)).toEqual(['e1', 'gone']);
    const r = toRecord(events, 1, emails);
    expect(r.cursor).toBe(7);
    expect(r.events.map((e) => [e.seq, e.recipient])).toEqual([
      [2, 'x@inbox.test'],
      [4, 'y@inbox.test'],
    ]);
    expect(events[3]!.recipient).toBe(''); // the input is not changed
    expect(toRecord(events, 7, emails)).toEqual({ events: [] });
    const sole = new Map([['e1', sent({ recipients: [{ address: 'x@inbox.test', kind: 'to', status: 'queued' }] })]]);
    expect(toRecord([ev(6, 'complained', '', { recipientIndex: 0, soleRecipient: true })], 0, sole).events[0]!.recipient).toBe('x@inbox.test');
  });

  it('each event sees the state the one before left; a status is counted once; the end state is written once per row', () => {
    const { outcome, changes } = run([
      ev(1, 'sending', 'x@inbox.test'),
      ev(2, 'sending', 'y@inbox.test'),
      ev(3, 'sent', 'x@inbox.test'),
      ev(4, 'sent', 'y@inbox.test'),
      ev(5, 'delivered', 'x@inbox.test'),
    ]);
    expect(outcome.map((a) => a.emailStatus)).toEqual(['sending', 'sending', 'sending', 'sent', 'sent']);
    expect(outcome[0]).toMatchObject({ projectId: 'p1', seq: 1 });
    expect(changes.recipients).toEqual([
      { emailId: 'e1', address: 'x@inbox.test', status: 'delivered', at: NOW + 5 },
      { emailId: 'e1', address: 'y@inbox.test', status: 'sent', at: NOW + 4 },
    ]);
    expect(changes.emails).toEqual([{ id: 'e1', updatedAt: NOW + 5, status: 'sent', reached: 'queued,sending,sent' }]);
    expect(changes.statuses.map((s) => s.status)).toEqual(['sending', 'sent']);
    // Only changes of the email's status are sent (the sent-only endpoint gets the one it asked for).
    expect(changes.webhooks.map((w) => [w.status, w.webhookIds])).toEqual([
      ['sending', ['w-all']],
      ['sent', ['w-all', 'w-sent']],
    ]);
    expect(changes.webhooks[1]!.event).toEqual({ type: 'sent', at: NOW + 4, recipient: 'y@inbox.test', attempt: 1 });
  });

  it('a deferral is sent though the status stays; a status reached before is not counted again', () => {
    const { changes } = run(
      [ev(1, 'deferred', 'x@inbox.test', { details: { response: '451 later' } }), ev(2, 'deferred', 'x@inbox.test', { attempt: 2 })],
      sent({ status: 'sending', reached: 'queued,sending', recipients: [{ address: 'x@inbox.test', kind: 'to', status: 'sending' }] }),
    );
    expect(changes.statuses).toEqual([]);
    expect(changes.webhooks.map((w) => [w.status, w.event.type, w.event.response])).toEqual([
      ['sending', 'deferred', '451 later'],
      ['sending', 'deferred', undefined],
    ]);
  });

  it('an event the log held before, or a repeat within the run, changes nothing', () => {
    const email = sent();
    const emails = new Map([[email.id, email]]);
    const events = [ev(1, 'sent', 'x@inbox.test'), ev(2, 'sent', 'x@inbox.test'), ev(3, 'bounced', 'y@inbox.test')];
    // The log recorded the first 'sent' now (the second has its key), and held the bounce already.
    const d = applyEvents({ emails, hooks: new Map() }, events, new Set([eventKey(events[0]!)]));
    expect(d.outcome.map((a) => a.seq)).toEqual([1]);
    expect(d.changes.suppressions).toEqual([]);
    expect(email.recipients[0]!.status).toBe('queued'); // the loaded state is not changed
  });

  it('an event with no recipient applies to every recipient', () => {
    const { outcome, changes } = run([ev(1, 'sent', '')]);
    expect(outcome[0]!.emailStatus).toBe('sent');
    expect(changes.recipients.map((r) => r.address)).toEqual(['x@inbox.test', 'y@inbox.test']);
  });

  const s = (address: string, reason: string, scope: string, seq: number) => ({ projectId: 'p1', address, reason, scope, emailId: 'e1', at: NOW + seq });
  it.each([
    ['an unsubscribe: bulk mail', false, [ev(1, 'unsubscribed', 'x@inbox.test')], [s('x@inbox.test', 'unsubscribed', 'bulk', 1)]],
    ['a complaint about bulk mail: bulk mail', true, [ev(1, 'complained', 'x@inbox.test')], [s('x@inbox.test', 'complained', 'bulk', 1)]],
    ['a complaint about other mail: none', false, [ev(1, 'complained', 'x@inbox.test')], []],
    ['a bounce: all mail', false, [ev(1, 'bounced', 'x@inbox.test')], [s('x@inbox.test', 'bounced', 'all', 1)]],
    [
      'a bounce after an unsubscribe: the bounce',
      true,
      [ev(1, 'unsubscribed', 'x@inbox.test'), ev(2, 'bounced', 'x@inbox.test')],
      [s('x@inbox.test', 'bounced', 'all', 2)],
    ],
    [
      'an unsubscribe after a bounce: the bounce',
      false,
      [ev(1, 'bounced', 'x@inbox.test'), ev(2, 'unsubscribed', 'x@inbox.test')],
      [s('x@inbox.test', 'bounced', 'all', 1)],
    ],
    [
      'two bulk ones: the first',
      true,
      [ev(1, 'unsubscribed', 'x@inbox.test'), ev(2, 'complained', 'x@inbox.test')],
      [s('x@inbox.test', 'unsubscribed', 'bulk', 1)],
    ],
    [
      'two bounces (a retried one, an asynchronous one after sent): the first',
      false,
      [ev(1, 'bounced', 'x@inbox.test'), ev(2, 'bounced', 'x@inbox.test', { attempt: 2 })],
      [s('x@inbox.test', 'bounced', 'all', 1)],
    ],
  ] as const)('suppressions of %s', (_name, bulk, events, suppressions) => {
    expect(run([...events], sent({ bulk })).changes.suppressions).toEqual(suppressions);
  });

  it('a bounce after sent moves the recipient back to bounced; a rejected one may be tried again', () => {
    const email = sent({
      status: 'sending',
      recipients: [
        { address: 'x@inbox.test', kind: 'to', status: 'sent' },
        { address: 'y@inbox.test', kind: 'to', status: 'rejected' },
      ],
    });
    const { changes } = run([ev(1, 'bounced', 'x@inbox.test'), ev(2, 'sending', 'y@inbox.test'), ev(3, 'queued' as never, 'y@inbox.test')], email);
    expect(changes.recipients.map((r) => [r.address, r.status])).toEqual([
      ['x@inbox.test', 'bounced'],
      ['y@inbox.test', 'sending'],
    ]);
  });
});

describe('webhook messages', () => {
  it('one per endpoint that wants the change, with the email request read only where the notice lacks it', () => {
    const { changes } = accepted(newEmail());
    const later = cancel(loaded({ request: undefined }), [everything, { id: 'w-2', statuses: ['canceled'], enabled: true }], NOW).changes.webhooks;
    const notices = [...changes.webhooks, ...later];
    expect(requestsToRead(notices)).toEqual(['e1']);
    const messages = webhookMessages(notices, new Map([['e1', request(['z@inbox.test'])]]));
    expect(messages.map((m) => [m.webhookId, m.projectId, m.at])).toEqual([
      ['w-all', 'p1', NOW],
      ['w-all', 'p1', NOW],
      ['w-2', 'p1', NOW],
    ]);
    for (const m of messages) expect(m.id).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(new Set(messages.map((m) => m.id)).size).toBe(3);
    const first = JSON.parse(messages[0]!.payload);
    expect(first).toMatchObject({ type: 'email.queued', data: { email_id: 'e1', to: ['x@inbox.test', 'y@inbox.test'], tags: ['t1'] } });
    expect(JSON.parse(messages[1]!.payload)).toMatchObject({ type: 'email.canceled', data: { to: ['z@inbox.test'] } });
  });
});
