// gateway/outcome.ts: Haraka's outbound hook arguments as delivery events, one per recipient: whose
// refusal it was, the remote's reply and enhanced code of the right class, bounced or rejected, the
// MX by name, and the attempt counted as we count them.
import { describe, expect, it } from 'vitest';
import type { BounceError, DeliveredParams, HarakaAddress, HMailItem } from '../../gateway/haraka.js';
import {
  attemptOf,
  bounceEvents,
  classifyPermanent,
  deferredEvents,
  failuresOf,
  MX_FAILURE,
  MX_NAMES,
  PROVIDER,
  retryDelay,
  sendingEvents,
  sentEvents,
} from '../../gateway/outcome.js';

const NOW = 1_000_000;
const addr = (address: string, o: Partial<HarakaAddress> = {}): HarakaAddress => ({
  address,
  user: address.split('@')[0]!,
  host: address.split('@')[1]!,
  ...o,
});

function hmail(o: { rcpts?: string[]; failures?: number; base?: number; notes?: Record<string, unknown> } = {}): HMailItem {
  return {
    filename: 'f',
    path: '/q/f',
    data_stream: () => {
      throw new Error('not read');
    },
    num_failures: o.failures ?? 0,
    notes: { [PROVIDER]: 'google', [MX_NAMES]: { '203.0.113.9': 'mx1.inbox.test' }, ...o.notes },
    todo: {
      uuid: 'u',
      domain: 'inbox.test',
      queue_time: 0,
      mail_from: addr('b+x@pg-bounces.acme.test'),
      rcpt_to: (o.rcpts ?? ['a@inbox.test', 'b@inbox.test']).map((r) => addr(r)),
      notes: { email_id: 'e-1', ...(o.base !== undefined ? { attempt_base: o.base } : {}) },
    },
  };
}
const bounce = (message: string, o: Partial<BounceError> = {}): BounceError => Object.assign(new Error(message), o);

it('retryDelay: the delay of failure n, the last one repeating; 60 s without a schedule', () => {
  expect([1, 2, 3, 9].map((n) => retryDelay([60, 300, 900], n))).toEqual([60, 300, 900, 900]);
  expect(retryDelay([60, 300], 0)).toBe(60);
  expect(retryDelay([], 4)).toBe(60);
});

it('attempts continue the count of the queue items a scheduled retry replaced', () => {
  expect(attemptOf(hmail())).toBe(1);
  expect(failuresOf(hmail({ failures: 2 }))).toBe(2);
  expect(attemptOf(hmail({ failures: 2, base: 3 }))).toBe(6);
});

describe('classifyPermanent', () => {
  it.each([
    ['5.7.1', 'anything', 'rejected'],
    ['5.1.1', 'user unknown, spam', 'bounced'],
    ['5.2.2', 'mailbox full', 'bounced'],
    ['5.0.0', 'message refused as spam', 'rejected'],
    ['', 'blocked using zen.spamhaus.org (RBL)', 'rejected'],
    ['5.0.0', 'IP on a block list', 'rejected'],
    ['', 'no such user', 'bounced'],
  ] as const)('%s %s → %s', (enhanced, response, type) => {
    expect(classifyPermanent(enhanced, response)).toBe(type);
  });
});

it('sending and sent: one event per recipient, the MX named rather than its IP', () => {
  expect(sendingEvents(hmail({ failures: 1 }), NOW).map((e) => [e.type, e.recipient, e.attempt, e.provider])).toEqual([
    ['sending', 'a@inbox.test', 2, 'google'],
    ['sending', 'b@inbox.test', 2, 'google'],
  ]);
  const params = ['mx1.inbox.test', '203.0.113.9', '250 2.0.0 OK queued', 0, 25, 'SMTP', [addr('a@inbox.test')], true, false] as DeliveredParams;
  expect(sentEvents(hmail(), params, NOW)).toEqual([
    {
      emailId: 'e-1',
      atMs: NOW,
      provider: 'google',
      type: 'sent',
      recipient: 'a@inbox.test',
      mx: 'mx1.inbox.test',
      response: '250 2.0.0 OK queued',
      attempt: 1,
      enhancedCode: '',
      nextAttemptMs: 0,
    },
  ]);
});

describe('deferredEvents', () => {
  it('the recipients the remote named, with their own 4xx reply and code; due after the delay', () => {
    const named = [addr('a@inbox.test', { reason: '452 4.2.2 Mailbox full', dsn_smtp_extc: '4.2.2' })];
    const [e] = deferredEvents(
      hmail({ failures: 1 }),
      { delay: 300, err: 'Some recipients failed', fail_recips: named, mx: { exchange: '203.0.113.9' } },
      300,
      NOW,
    );
    expect(e).toMatchObject({
      type: 'deferred',
      recipient: 'a@inbox.test',
      response: '452 4.2.2 Mailbox full',
      enhancedCode: '4.2.2',
      mx: 'mx1.inbox.test',
      attempt: 1,
      nextAttemptMs: NOW + 300_000,
      cause: 'receiver',
    });
  });

  it('no named recipient: every one, with the upstream reply (without Haraka’s prefix); never a 5.x.x code', () => {
    const events = deferredEvents(
      hmail({ failures: 1 }),
      { delay: 60, err: 'Upstream error: 421 5.7.0 Try again later', mx: { exchange: 'mx1.inbox.test' } },
      60,
      NOW,
    );
    expect(events.map((e) => [e.recipient, e.response, e.enhancedCode, e.cause])).toEqual([
      ['a@inbox.test', '421 5.7.0 Try again later', '', 'receiver'],
      ['b@inbox.test', '421 5.7.0 Try again later', '', 'receiver'],
    ]);
  });

  it('no answer at all (DNS, connection): the network, not the receiver, with no MX; postgate_mx’s reason when it set one', () => {
    const [e] = deferredEvents(hmail({ failures: 1, rcpts: ['a@inbox.test'] }), { delay: 60, err: 'connect ECONNREFUSED' }, 60, NOW);
    expect(e).toMatchObject({ response: 'connect ECONNREFUSED', cause: 'network', mx: '' });
    const noMx = hmail({ failures: 1, rcpts: ['a@inbox.test'], notes: { [MX_FAILURE]: { reason: 'MX lookup timed out', enhancedCode: '' } } });
    expect(deferredEvents(noMx, { delay: 60, err: 'x' }, 60, NOW)[0]).toMatchObject({ response: 'MX lookup timed out', cause: 'network' });
  });
});

describe('bounceEvents', () => {
  it('the refused recipients: bounced for a bad mailbox, rejected for policy, each with its reply', () => {
    const err = bounce('Some recipients failed', {
      bounced_rcpt: [
        addr('gone@inbox.test', { reason: '550 5.1.1 No such user', dsn_smtp_extc: '5.1.1' }),
        addr('spam@inbox.test', { dsn_smtp_code: '554', dsn_smtp_extc: '5.7.1', dsn_smtp_response: 'Message refused' }),
      ],
      mx: { exchange: '203.0.113.9' },
    });
    expect(bounceEvents(hmail(), err, NOW).map((e) => [e.type, e.recipient, e.response, e.enhancedCode, e.mx, e.cause])).toEqual([
      ['bounced', 'gone@inbox.test', '550 5.1.1 No such user', '5.1.1', 'mx1.inbox.test', 'receiver'],
      ['rejected', 'spam@inbox.test', '554 5.7.1 Message refused', '5.7.1', 'mx1.inbox.test', 'receiver'],
    ]);
  });

  it('a 4xx that outlasted the retries is a refusal by the receiver: rejected, its last reply, a 4.x.x code or 5.4.7', () => {
    const h = hmail({ failures: 5, rcpts: ['a@inbox.test'] });
    const [e] = bounceEvents(h, bounce('Too many failures (Upstream error: 421 4.7.0 Rate limited)'), NOW);
    expect(e).toMatchObject({ type: 'rejected', response: '421 4.7.0 Rate limited', enhancedCode: '4.7.0', attempt: 5 });
    const [silent] = bounceEvents(h, bounce('Too many failures (connect ETIMEDOUT)'), NOW);
    expect(silent).toMatchObject({ type: 'rejected', response: 'connect ETIMEDOUT', enhancedCode: '5.4.7' });
  });

  it('no route (postgate_mx’s permanent reason): bounced, its code, no MX, the network’s doing', () => {
    const h = hmail({ rcpts: ['a@nx.test'], notes: { [MX_FAILURE]: { reason: 'Domain nx.test does not exist', enhancedCode: '5.1.2' } } });
    expect(bounceEvents(h, bounce('No MX for nx.test'), NOW)[0]).toMatchObject({
      type: 'bounced',
      response: 'Domain nx.test does not exist',
      enhancedCode: '5.1.2',
      mx: '',
      cause: 'network',
    });
  });

  it('a whole-message refusal at MAIL or DATA: every recipient, the remote’s reply without Haraka’s prefix', () => {
    const events = bounceEvents(hmail(), bounce('Upstream error: 554 5.7.1 Spam detected', { mx: { exchange: '203.0.113.9' } }), NOW);
    expect(events.map((e) => [e.recipient, e.type, e.response, e.enhancedCode])).toEqual([
      ['a@inbox.test', 'rejected', '554 5.7.1 Spam detected', '5.7.1'],
      ['b@inbox.test', 'rejected', '554 5.7.1 Spam detected', '5.7.1'],
    ]);
  });
});
