// How the operator's email view words each event (eventOut): the remote's answer as the gateway recorded
// it (control/delivery/gateway-events.ts), or control's own reason for an event it made itself.
import { expect, it } from 'vitest';
import { eventOut } from '../../../control/operations/emails-routes.js';

const at = Date.parse('2026-11-29T10:00:00Z');

it('a bounce: the code, enhanced code and answer of the MX, its provider and cause', () => {
  const details = { mx: 'mx.inbox.test', response: '550 5.1.1 <a@inbox.test>: User unknown', enhanced_code: '5.1.1', cause: 'receiver', provider: 'other' };
  expect(eventOut({ type: 'bounced', recipient: 'a@inbox.test', attempt: 1, at, details })).toEqual({
    type: 'bounced',
    recipient: 'a@inbox.test',
    attempt: 1,
    at: '2026-11-29T10:00:00.000Z',
    provider: 'other',
    mx: 'mx.inbox.test',
    code: 550,
    enhanced_code: '5.1.1',
    response: '550 5.1.1 <a@inbox.test>: User unknown',
    cause: 'receiver',
    rule: null,
  });
});

it('a sent event keeps only the text of the 250 that accepted it; a deferral by a shaping rule names the rule', () => {
  expect(eventOut({ type: 'sent', recipient: 'a@x.test', attempt: 2, at, details: { mx: 'mx.x.test', response: 'OK: queued as 42' } })).toMatchObject({
    code: 250,
    response: 'OK: queued as 42',
    attempt: 2,
  });
  const shaped = { cause: 'shaping', rule: 'google-421-4.7.28', provider: 'google', next_attempt_at: '2026-11-29T10:05:00.000Z', response: 'held' };
  expect(eventOut({ type: 'deferred', recipient: 'a@gmail.com', attempt: 1, at, details: shaped })).toMatchObject({
    code: null,
    cause: 'shaping',
    rule: 'google-421-4.7.28',
    provider: 'google',
    mx: null,
  });
  // A network failure: no answer at all.
  const network = { response: 'connect ECONNREFUSED 127.0.0.2:25', cause: 'network' };
  expect(eventOut({ type: 'deferred', recipient: 'a@yahoo.com', attempt: 1, at, details: network })).toMatchObject({ code: null, cause: 'network' });
});

it("control's own events: its reason as the response and its error code as the cause; none: all null", () => {
  const failed = { reason: 'Daily quota of 100 emails reached', code: 'QUOTA_EXCEEDED' };
  expect(eventOut({ type: 'failed', recipient: '', attempt: 0, at, details: failed })).toMatchObject({
    recipient: null,
    attempt: null,
    code: null,
    response: 'Daily quota of 100 emails reached',
    cause: 'QUOTA_EXCEEDED',
  });
  expect(eventOut({ type: 'deferred', recipient: '', attempt: 0, at, details: { cause: 'volume', reason: 'spike' } })).toMatchObject({
    cause: 'volume',
    response: 'spike',
  });
  expect(eventOut({ type: 'queued', recipient: '', attempt: 0, at, details: null })).toEqual({
    type: 'queued',
    recipient: null,
    attempt: null,
    at: '2026-11-29T10:00:00.000Z',
    provider: null,
    mx: null,
    code: null,
    enhanced_code: null,
    response: null,
    cause: null,
    rule: null,
  });
});

it("shows the attempt's TLS where the gateway said it (gateway/tls)", () => {
  const tls = { used: false, version: '', verified: false, policy: 'domain' };
  const details = {
    mx: 'mx.plain.test',
    response: 'TLS required (domain): the MX mx.plain.test offers no STARTTLS',
    enhanced_code: '4.7.10',
    cause: 'receiver',
    tls,
  };
  expect(eventOut({ type: 'deferred', recipient: 'a@plain.test', attempt: 1, at, details })).toMatchObject({
    code: null,
    enhanced_code: '4.7.10',
    cause: 'receiver',
    tls,
  });
  expect(eventOut({ type: 'sent', recipient: 'a@x.test', attempt: 1, at, details: { response: 'OK' } })).not.toHaveProperty('tls');
});
