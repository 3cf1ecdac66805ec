// control/mail/rules.ts: the verdicts a store applies in the transaction that records an email:
// quotas, the bulk same-subject limit and volume spikes, suppressions by scope, and the words of a
// refusal. Pure functions of counts; what the lifecycle does with them is lifecycle.test.ts's.
import { describe, expect, it } from 'vitest';
import { judgeBulk, judgeQuota, judgeSuppressions, refusalText, SUPPRESSED, subjectHash } from '../../../control/mail/rules.js';
import type { BulkCounts, NewEmail } from '../../../control/mail/vocabulary.js';

describe('judgeQuota', () => {
  const quota = { daily: 100, monthly: 1000 };

  it('refuses once the day or the month is used up, the day first', () => {
    expect(judgeQuota({ day: 99, month: 500 }, quota)).toBeUndefined();
    expect(judgeQuota({ day: 100, month: 500 }, quota)).toEqual({ kind: 'quota', period: 'daily', limit: 100 });
    expect(judgeQuota({ day: 10, month: 1000 }, quota)).toEqual({ kind: 'quota', period: 'monthly', limit: 1000 });
    expect(judgeQuota({ day: 100, month: 1000 }, quota)).toMatchObject({ period: 'daily' });
  });

  it('a quota of 0 refuses everything', () => {
    expect(judgeQuota({ day: 0, month: 0 }, { daily: 0, monthly: 10 })).toMatchObject({ period: 'daily', limit: 0 });
  });
});

describe('judgeBulk', () => {
  const rules = { subjectLimit: 1000, spike: { factor: 3, floor: 500, days: 7 } };
  const counts = (o: Partial<BulkCounts>): BulkCounts => ({ recipients: 1, sameSubjectToday: 0, today: 0, average: 0, allowance: 0, ...o });

  it('the same subject over the daily limit is refused, counting this email’s recipients', () => {
    expect(judgeBulk(counts({ recipients: 10, sameSubjectToday: 990 }), rules)).toEqual({});
    expect(judgeBulk(counts({ recipients: 11, sameSubjectToday: 990 }), rules)).toEqual({ refusal: { kind: 'bulk-subject', limit: 1000, sentToday: 990 } });
  });

  it('volume above max(floor, factor × average, allowance) is held, with a reason that says what to do', () => {
    expect(judgeBulk(counts({ today: 499 }), rules)).toEqual({});
    const held = judgeBulk(counts({ today: 500 }), rules);
    expect(held).toEqual({
      held: expect.stringMatching(
        /^bulk volume today \(501\) is far above this project's usual \(0 a day\); announce it with POST \/v1\/pacing\/announcements/,
      ),
    });
    // A project that usually sends 400 a day may send 1,200.
    expect(judgeBulk(counts({ today: 1199, average: 400 }), rules)).toEqual({});
    expect(judgeBulk(counts({ today: 1200, average: 400 }), rules)).toHaveProperty('held');
    // An announced or approved volume raises it.
    expect(judgeBulk(counts({ today: 4999, allowance: 5000 }), rules)).toEqual({});
  });

  it('the same-subject limit is judged before the volume', () => {
    expect(judgeBulk(counts({ recipients: 2000, today: 100_000 }), rules)).toHaveProperty('refusal');
  });
});

it('subjectHash: subjects that differ only in case, spacing or Unicode form are one', () => {
  const h = subjectHash('Big Sale: 50% off');
  expect(h).toMatch(/^[0-9a-f]{32}$/);
  expect(subjectHash('  big   sale:\t50%  OFF ')).toBe(h);
  expect(subjectHash('Ｂｉｇ Sale: 50% off')).toBe(h);
  expect(subjectHash('Big Sale: 60% off')).not.toBe(h);
});

describe('judgeSuppressions', () => {
  const email = (o: Partial<NewEmail> = {}): NewEmail => ({
    id: 'e',
    projectId: 'p',
    status: 'queued',
    from: 'a@acme.test',
    subject: 's',
    bulk: false,
    request: '{}',
    createdAt: 1,
    recipients: [
      { address: 'all@x.test', kind: 'to' },
      { address: 'bulk@x.test', kind: 'cc' },
      { address: 'ok@x.test', kind: 'bcc' },
    ],
    ...o,
  });
  const scopes: Record<string, 'all' | 'bulk'> = { 'all@x.test': 'all', 'bulk@x.test': 'bulk' };
  const scopeOf = (a: string) => scopes[a];

  it('transactional mail: only addresses suppressed for all mail fail; the others stay, in their places', () => {
    const r = judgeSuppressions(email(), scopeOf);
    expect(r.suppressed).toBe(false);
    expect(r.email.status).toBe('queued');
    expect(r.email.recipients).toEqual([
      { address: 'all@x.test', kind: 'to', status: 'failed', reason: 'suppressed' },
      { address: 'bulk@x.test', kind: 'cc' },
      { address: 'ok@x.test', kind: 'bcc' },
    ]);
  });

  it('bulk mail: an unsubscribed address fails too', () => {
    const r = judgeSuppressions(email({ bulk: true }), scopeOf);
    expect(r.email.recipients.map((x) => x.reason)).toEqual(['suppressed', 'unsubscribed', undefined]);
  });

  it('no recipient left: the email fails with RECIPIENT_IN_SUPPRESSION_LIST', () => {
    const r = judgeSuppressions(
      email({
        bulk: true,
        recipients: [
          { address: 'all@x.test', kind: 'to' },
          { address: 'bulk@x.test', kind: 'to' },
        ],
      }),
      scopeOf,
    );
    expect(r.suppressed).toBe(true);
    expect(r.email).toMatchObject({ status: 'failed', error: SUPPRESSED.message, errorCode: 'RECIPIENT_IN_SUPPRESSION_LIST' });
  });

  it('an email refused already keeps its own error; the input is not changed (a store may judge again)', () => {
    const refused = email({ status: 'failed', error: 'Domain not verified', errorCode: 'DOMAIN_NOT_VERIFIED' });
    expect(judgeSuppressions(refused, scopeOf)).toEqual({ email: refused, suppressed: false });
    const input = email();
    const before = JSON.stringify(input);
    judgeSuppressions(input, scopeOf);
    expect(JSON.stringify(input)).toBe(before);
  });
});

it('refusalText: the code and words a user reads', () => {
  expect(refusalText({ kind: 'suppressed' })).toEqual(SUPPRESSED);
  expect(refusalText({ kind: 'quota', period: 'monthly', limit: 3000 })).toEqual({
    code: 'QUOTA_EXCEEDED',
    message: 'The monthly quota of 3000 emails is used up',
  });
  expect(refusalText({ kind: 'bulk-subject', limit: 1000, sentToday: 998 })).toEqual({
    code: 'BULK_LIMIT_EXCEEDED',
    message: 'The daily limit of 1000 bulk emails with the same subject is reached (998 sent today)',
  });
});
