// control/mail/email-view.ts: the public shape of an email, spec fields and Resend's beside them:
// last_event from the status (and the last event while sending), message_id from the sender's domain,
// the system mail's body never shown, recipients and events in the view, ISO times.
import { describe, expect, it } from 'vitest';
import { emailListItem, emailView } from '../../../control/mail/email-view.js';
import type { StoredRequest } from '../../../control/mail/vocabulary.js';
import type { EmailRow, EventRow, RecipientRow, Store, TrackingCountRow } from '../../../control/store/index.js';

const T = Date.UTC(2026, 0, 2, 3, 4, 5);
const request = (o: Partial<StoredRequest> = {}): StoredRequest => ({
  from: 'Acme <hello@acme.test>',
  to: ['a@x.test'],
  cc: ['c@x.test'],
  bcc: [],
  reply_to: ['r@acme.test'],
  subject: 'Hi',
  html: '<p>hi</p>',
  text: 'hi',
  tags: ['welcome'],
  headers: {},
  bulk: false,
  ...o,
});
const email = (o: Partial<EmailRow> = {}, r: Partial<StoredRequest> = {}): EmailRow => ({
  id: 'em_1',
  projectId: 'prj_acme',
  status: 'delivered',
  from: 'Acme <hello@acme.test>',
  subject: 'Hi',
  bulk: false,
  request: JSON.stringify(request(r)),
  error: null,
  errorCode: null,
  createdAt: T,
  updatedAt: T + 1000,
  dispatchedAt: null,
  scheduledAt: null,
  ...o,
});
const event = (type: EventRow['type'], o: Partial<EventRow> = {}): EventRow => ({ type, recipient: '', attempt: 0, at: T, details: null, ...o });

/** A store that holds one email (the view reads nothing else). */
function storeOf(e: EmailRow, recipients: RecipientRow[] = [], events: EventRow[] = [], tracking: TrackingCountRow[] = []): Store {
  return {
    emails: { get: async (projectId: string, id: string) => (projectId === e.projectId && id === e.id ? { email: e, recipients, events } : undefined) },
    tracking: { counts: async (id: string) => (id === e.id ? tracking : []) },
  } as unknown as Store;
}

describe('emailListItem', () => {
  it('has the summary fields, times as ISO, and no body, recipients or events', () => {
    const item = emailListItem(email());
    expect(item).toEqual({
      id: 'em_1',
      status: 'delivered',
      from: 'Acme <hello@acme.test>',
      to: ['a@x.test'],
      cc: ['c@x.test'],
      bcc: [],
      reply_to: ['r@acme.test'],
      subject: 'Hi',
      tags: ['welcome'],
      bulk: false,
      created_at: '2026-01-02T03:04:05.000Z',
      updated_at: '2026-01-02T03:04:06.000Z',
      scheduled_at: null,
      last_event: 'delivered',
      message_id: '<em_1@acme.test>',
    });
  });

  it('shows scheduled_at as ISO when the email waits', () => {
    expect(emailListItem(email({ status: 'scheduled', scheduledAt: T + 60_000 })).scheduled_at).toBe('2026-01-02T03:05:05.000Z');
  });

  it("maps the status onto Resend's last_event", () => {
    const last = (o: Partial<EmailRow>) => emailListItem(email(o)).last_event;
    expect(last({ status: 'sending' })).toBe('queued');
    expect(last({ status: 'rejected' })).toBe('bounced');
    expect(last({ status: 'failed' })).toBe('failed');
    expect(last({ status: 'failed', errorCode: 'RECIPIENT_IN_SUPPRESSION_LIST' })).toBe('suppressed');
    expect(last({ status: 'queued' })).toBe('queued');
    expect(last({ status: 'delivered' })).toBe('delivered');
  });

  it('gives no message_id when the sender cannot be read', () => {
    expect(emailListItem(email({ from: 'not an address' })).message_id).toBeNull();
  });
});

describe('emailView', () => {
  it('is undefined for an email of another project or none', async () => {
    const s = storeOf(email());
    expect(await emailView(s, 'prj_other', 'em_1')).toBeUndefined();
    expect(await emailView(s, 'prj_acme', 'em_2')).toBeUndefined();
  });

  it('shows body, attachments, recipients and events with their details', async () => {
    const attachments = [{ id: 'att_1', filename: 'a.pdf', content_type: 'application/pdf', size: 3 }];
    const s = storeOf(
      email({}, { attachments }),
      [{ address: 'a@x.test', kind: 'to', status: 'delivered', updatedAt: T + 2000 }],
      [event('queued'), event('delivered', { recipient: 'a@x.test', attempt: 1, at: T + 2000, details: { response: '250 ok' } })],
    );
    const v = await emailView(s, 'prj_acme', 'em_1');
    expect(v).toMatchObject({
      object: 'email',
      id: 'em_1',
      status: 'delivered',
      html: '<p>hi</p>',
      text: 'hi',
      attachments,
      error: null,
      recipients: [{ email: 'a@x.test', kind: 'to', status: 'delivered', updated_at: '2026-01-02T03:04:07.000Z' }],
    });
    // An event carries recipient and attempt only when it has them.
    expect(v!.events).toEqual([
      { type: 'queued', at: '2026-01-02T03:04:05.000Z' },
      { type: 'delivered', at: '2026-01-02T03:04:07.000Z', recipient: 'a@x.test', attempt: 1, response: '250 ok' },
    ]);
  });

  it('shows no attachments as an empty list and a missing body as null', async () => {
    const v = await emailView(storeOf(email({}, { html: undefined, text: undefined })), 'prj_acme', 'em_1');
    expect(v).toMatchObject({ html: null, text: null, attachments: [] });
  });

  it("never shows the body of the platform's own mail", async () => {
    const v = await emailView(storeOf(email({}, { system: true, html: '<p>123456</p>', text: '123456' })), 'prj_acme', 'em_1');
    expect(v).toMatchObject({ html: null, text: null });
    expect(JSON.stringify(v)).not.toContain('123456');
  });

  it('shows an error with its code', async () => {
    const v = await emailView(storeOf(email({ status: 'failed', error: 'no route', errorCode: 'DELIVERY_FAILED' })), 'prj_acme', 'em_1');
    expect(v!.error).toEqual({ error: 'no route', code: 'DELIVERY_FAILED' });
  });

  it('says delivery_delayed while sending once the last event is a deferral, queued otherwise', async () => {
    const sending = email({ status: 'sending' });
    expect((await emailView(storeOf(sending, [], [event('queued'), event('deferred')]), 'prj_acme', 'em_1'))!.last_event).toBe('delivery_delayed');
    expect((await emailView(storeOf(sending, [], [event('deferred'), event('sent')]), 'prj_acme', 'em_1'))!.last_event).toBe('queued');
  });

  it("says opened or clicked once a person opened or clicked a delivered email (a machine's fetch does not count), with the tracking summary", async () => {
    const delivered = email({ status: 'delivered' });
    const person = (type: EventRow['type'], at: number) => event(type, { at, details: { bot: false } });
    const bot = (type: EventRow['type'], at: number) => event(type, { at, details: { bot: true } });
    const view = (events: EventRow[], rows: TrackingCountRow[] = []) => emailView(storeOf(delivered, [], events, rows), 'prj_acme', 'em_1');
    expect((await view([event('delivered'), bot('opened', T + 1)]))!.last_event).toBe('delivered');
    expect((await view([event('delivered'), person('opened', T + 1)]))!.last_event).toBe('opened');
    expect((await view([event('delivered'), person('clicked', T + 1), person('opened', T + 2)]))!.last_event).toBe('opened');
    expect((await view([event('delivered'), person('opened', T + 1), person('clicked', T + 2), bot('opened', T + 3)]))!.last_event).toBe('clicked');
    const rows: TrackingCountRow[] = [
      { kind: 'open', link: '', count: 3, bots: 1, firstAt: T + 1, lastAt: T + 9 },
      { kind: 'click', link: 'https://a.example/', count: 2, bots: 0, firstAt: T + 2, lastAt: T + 5 },
      { kind: 'click', link: 'https://b.example/', count: 1, bots: 1, firstAt: T + 3, lastAt: T + 3 },
    ];
    const iso = (ms: number) => new Date(ms).toISOString();
    expect((await view([], rows))!.tracking).toEqual({
      opens: { count: 3, bots: 1, first_at: iso(T + 1), last_at: iso(T + 9) },
      clicks: {
        count: 3,
        bots: 1,
        first_at: iso(T + 2),
        last_at: iso(T + 5),
        links: [
          { link: 'https://a.example/', count: 2, bots: 0, first_at: iso(T + 2), last_at: iso(T + 5) },
          { link: 'https://b.example/', count: 1, bots: 1, first_at: iso(T + 3), last_at: iso(T + 3) },
        ],
      },
    });
    expect((await view([]))!.tracking).toEqual({
      opens: { count: 0, bots: 0, first_at: null, last_at: null },
      clicks: { count: 0, bots: 0, first_at: null, last_at: null, links: [] },
    });
  });
});
