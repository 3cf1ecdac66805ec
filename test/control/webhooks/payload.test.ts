// control/webhooks/payload.ts: which endpoints want an event, and the message body (Standard
// Webhooks envelope plus Resend's created_at) for an email's status and for an auth event.
import { describe, expect, it } from 'vitest';
import { authEventPayload, wantsAuthEvent, wantsEvent, webhookPayload } from '../../../control/webhooks/payload.js';

describe('who wants an event', () => {
  const on = (statuses: string[]) => ({ statuses, enabled: true });

  it('an empty filter wants every email event; a filter wants its statuses and event kinds', () => {
    expect(wantsEvent(on([]), 'sent', { type: 'sent' })).toBe(true);
    expect(wantsEvent(on(['delivered']), 'delivered', { type: 'delivered' })).toBe(true);
    expect(wantsEvent(on(['delivered']), 'sent', { type: 'sent' })).toBe(false);
    // A deferral leaves the email `sending`: an endpoint that lists `deferred` gets it.
    expect(wantsEvent(on(['deferred']), 'sending', { type: 'deferred' })).toBe(true);
    expect(wantsEvent(on(['sending']), 'sending', { type: 'deferred' })).toBe(true);
  });

  it('a disabled endpoint wants nothing', () => {
    expect(wantsEvent({ statuses: [], enabled: false }, 'sent', { type: 'sent' })).toBe(false);
    expect(wantsAuthEvent({ statuses: ['user.created'], enabled: false }, 'user.created')).toBe(false);
  });

  it('auth events only to endpoints that list their type (an empty filter predates them)', () => {
    expect(wantsAuthEvent(on([]), 'session.created')).toBe(false);
    expect(wantsAuthEvent(on(['session.created']), 'session.created')).toBe(true);
    expect(wantsAuthEvent(on(['session.created']), 'session.revoked')).toBe(false);
  });
});

describe('bodies', () => {
  const email = { id: 'e1', from: 'a@acme.test', to: ['b@inbox.test'], subject: 'Hi', tags: ['welcome'], createdAt: Date.parse('2026-03-01T10:00:00Z') };
  const at = Date.parse('2026-03-01T10:00:05Z');

  it('an email status: its type, one instant as timestamp and created_at, the email and the event with an ISO time', () => {
    const body = JSON.parse(webhookPayload(email, 'delivered', at, { type: 'delivered', recipient: 'b@inbox.test', at }));
    expect(body).toEqual({
      type: 'email.delivered',
      timestamp: '2026-03-01T10:00:05.000Z',
      created_at: '2026-03-01T10:00:05.000Z',
      data: {
        email_id: 'e1',
        status: 'delivered',
        from: 'a@acme.test',
        to: ['b@inbox.test'],
        subject: 'Hi',
        tags: ['welcome'],
        created_at: '2026-03-01T10:00:00.000Z',
        event: { type: 'delivered', recipient: 'b@inbox.test', at: '2026-03-01T10:00:05.000Z' },
      },
    });
  });

  it('a deferral is email.deferred, whatever the email’s status', () => {
    expect(JSON.parse(webhookPayload(email, 'sending', at, { type: 'deferred', at })).type).toBe('email.deferred');
  });

  it('an auth event: its type and the data as given', () => {
    expect(JSON.parse(authEventPayload('user.created', at, { id: 'evt_1', user_id: 'u1' }))).toEqual({
      type: 'user.created',
      timestamp: '2026-03-01T10:00:05.000Z',
      created_at: '2026-03-01T10:00:05.000Z',
      data: { id: 'evt_1', user_id: 'u1' },
    });
  });
});

describe('opens and clicks', () => {
  const email = { id: 'e1', from: 'a@acme.test', to: ['b@inbox.test'], subject: 'Hi', tags: [], createdAt: Date.UTC(2026, 10, 29) };
  const at = Date.UTC(2026, 10, 29, 10);
  it("are email.opened and email.clicked whatever the status, with Resend's open/click object", () => {
    const clicked = JSON.parse(
      webhookPayload(email, 'delivered', at, { type: 'clicked', at, link: 'https://x.example/', user_agent: 'UA', ip: '203.0.113.0/24', bot: false }),
    );
    expect(clicked.type).toBe('email.clicked');
    expect(clicked.data).toMatchObject({
      email_id: 'e1',
      status: 'delivered',
      click: { link: 'https://x.example/', timestamp: new Date(at).toISOString(), userAgent: 'UA', ipAddress: '203.0.113.0/24', bot: false },
    });
    const opened = JSON.parse(
      webhookPayload(email, 'sent', at, {
        type: 'opened',
        at,
        user_agent: 'Mozilla/5.0',
        ip: '17.0.0.0/24',
        bot: true,
        bot_reason: 'Apple Mail Privacy Protection',
      }),
    );
    expect(opened.type).toBe('email.opened');
    expect(opened.data.open).toEqual({
      timestamp: new Date(at).toISOString(),
      userAgent: 'Mozilla/5.0',
      ipAddress: '17.0.0.0/24',
      bot: true,
      botReason: 'Apple Mail Privacy Protection',
    });
    expect(opened.data).not.toHaveProperty('click');
  });
});
