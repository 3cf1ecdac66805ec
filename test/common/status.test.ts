// common/status.ts: how a delivery event moves a recipient (never backwards, but a rejected one may
// be tried again, and a bounce may follow acceptance) and an email's status from its recipients'.
import { describe, expect, it } from 'vitest';
import { EMAIL_STATUSES, EVENT_KINDS, emailStatusOf, recipientRank, recipientStatusAfter, type RecipientStatus } from '../../common/status.js';

describe('recipientStatusAfter', () => {
  it.each([
    ['queued', 'sending', 'sending'],
    ['queued', 'deferred', 'sending'],
    ['sending', 'sent', 'sent'],
    ['sent', 'delivered', 'delivered'],
    ['sending', 'rejected', 'rejected'],
    ['rejected', 'sending', 'sending'],
    ['rejected', 'deferred', 'sending'],
    ['sent', 'bounced', 'bounced'],
    ['delivered', 'complained', 'complained'],
    ['queued', 'failed', 'failed'],
    ['queued', 'canceled', 'canceled'],
    ['sending', 'canceled', 'canceled'],
    // Canceled while its copy was on the wire: the receiver's answer is the truth.
    ['canceled', 'sent', 'sent'],
    ['canceled', 'delivered', 'delivered'],
    ['canceled', 'bounced', 'bounced'],
  ] as const)('%s + %s → %s', (current, event, next) => {
    expect(recipientStatusAfter(current, event)).toBe(next);
  });

  it.each([
    ['sent', 'sending'],
    ['delivered', 'sent'],
    ['delivered', 'bounced'],
    ['bounced', 'sent'],
    ['complained', 'delivered'],
    ['failed', 'sending'],
    ['sending', 'sending'],
    ['sending', 'unsubscribed'],
    ['sending', 'rescheduled'],
    ['queued', 'scheduled'],
    ['canceled', 'sending'],
    ['canceled', 'deferred'],
    ['canceled', 'rejected'],
    ['canceled', 'failed'],
  ] as const)('%s + %s changes nothing (never backwards; not a recipient status)', (current, event) => {
    expect(recipientStatusAfter(current, event)).toBeNull();
  });
});

describe('emailStatusOf', () => {
  it.each([
    [['queued', 'queued'], 'queued'],
    [['queued', 'sending'], 'sending'],
    [['sent', 'queued'], 'sending'],
    [['delivered', 'delivered'], 'delivered'],
    [['delivered', 'sent'], 'sent'],
    [['delivered', 'bounced'], 'sent'],
    [['rejected', 'bounced'], 'rejected'],
    [['bounced', 'failed'], 'bounced'],
    [['failed', 'failed'], 'failed'],
    [['sending', 'complained'], 'complained'],
    [[], 'queued'],
    // An operator's cancel is no delivery failure; what was delivered before it still counts.
    [['canceled', 'canceled'], 'canceled'],
    [['canceled', 'failed'], 'canceled'],
    [['canceled', 'rejected'], 'canceled'],
    [['canceled', 'sent'], 'sent'],
    [['canceled', 'sending'], 'sending'],
    [['bounced'], 'bounced'],
  ] as Array<[RecipientStatus[], string]>)('%j → %s', (recipients, status) => {
    expect(emailStatusOf(recipients)).toBe(status);
  });
});

it('every recipient status has a rank; the statuses and event kinds are the spec’s and ours, once each', () => {
  expect(Object.keys(recipientRank).sort()).toEqual(EMAIL_STATUSES.filter((s) => s !== 'scheduled').sort());
  expect(new Set(EVENT_KINDS).size).toBe(EVENT_KINDS.length);
  expect(EVENT_KINDS).toContain('deferred');
});
