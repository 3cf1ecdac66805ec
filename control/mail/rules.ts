// The ingestion limits a store judges inside the transaction that records an email
// (quotas, bulk same-subject limit, bulk volume hold), as pure functions of counts:
// every store backend calls these rather than re-implementing them, and the pipeline
// turns their refusals into the errors users see (the store words them as data only).
import crypto from 'node:crypto';
import type { BulkCounts, BulkRules, NewEmail, Quota, Refusal, SuppressionScope } from './vocabulary.js';

/** A quota refusal when the project has used up its day or its month, else undefined. */
export function judgeQuota(used: { day: number; month: number }, quota: Quota): Refusal | undefined {
  if (used.day >= quota.daily) return { kind: 'quota', period: 'daily', limit: quota.daily };
  if (used.month >= quota.monthly) return { kind: 'quota', period: 'monthly', limit: quota.monthly };
  return undefined;
}

/**
 * The same-subject limit refuses; volume far above the project's recent average, not
 * announced or approved, holds the email back (`held` says why, shown in its events).
 */
export function judgeBulk(c: BulkCounts, rules: BulkRules): { refusal: Refusal } | { held?: string } {
  if (c.sameSubjectToday + c.recipients > rules.subjectLimit) {
    return { refusal: { kind: 'bulk-subject', limit: rules.subjectLimit, sentToday: c.sameSubjectToday } };
  }
  const allowed = Math.max(rules.spike.floor, rules.spike.factor * c.average, c.allowance);
  if (c.today + c.recipients > allowed) {
    return {
      held: `bulk volume today (${c.today + c.recipients}) is far above this project's usual (${Math.round(c.average)} a day); announce it with POST /v1/pacing/announcements or ask the operator to approve it`,
    };
  }
  return {};
}

/** Subjects that differ only in case or spacing are the same subject. */
export const subjectHash = (subject: string): string =>
  crypto.createHash('sha256').update(subject.normalize('NFKC').trim().replace(/\s+/g, ' ').toLowerCase()).digest('hex').slice(0, 32);

/** An email every recipient of which is suppressed: recorded as failed, with this error. */
export const SUPPRESSED = { code: 'RECIPIENT_IN_SUPPRESSION_LIST', message: 'Every recipient is in the suppression list' } as const;

/**
 * The email as the project's suppression list leaves it (`scopeOf`: an address's scope, if
 * suppressed): a recipient suppressed for all mail, or unsubscribed from bulk mail that this
 * is, fails; when none is left the email fails (`suppressed`). A copy: the store may judge it again.
 */
export function judgeSuppressions(e: NewEmail, scopeOf: (address: string) => SuppressionScope | undefined): { email: NewEmail; suppressed: boolean } {
  // Refused already (an unverified sender domain): recorded as it is, with its own error.
  if (e.status === 'failed') return { email: e, suppressed: false };
  let left = 0;
  const recipients = e.recipients.map((r) => {
    if (r.status === 'failed') return r;
    const scope = scopeOf(r.address);
    if (scope === 'all' || (scope === 'bulk' && e.bulk)) return { ...r, status: 'failed' as const, reason: scope === 'bulk' ? 'unsubscribed' : 'suppressed' };
    left++;
    return r;
  });
  if (left) return { email: { ...e, recipients }, suppressed: false };
  return { email: { ...e, recipients, status: 'failed', error: SUPPRESSED.message, errorCode: SUPPRESSED.code }, suppressed: true };
}

/**
 * The code and text of a refusal, as the user reads it: recorded by the store on an email it
 * fails (a released scheduled email), and answered by the pipeline as its error.
 */
export function refusalText(r: Refusal | { kind: 'suppressed' }): {
  code: 'RECIPIENT_IN_SUPPRESSION_LIST' | 'QUOTA_EXCEEDED' | 'BULK_LIMIT_EXCEEDED';
  message: string;
} {
  switch (r.kind) {
    case 'suppressed':
      return SUPPRESSED;
    case 'quota':
      return { code: 'QUOTA_EXCEEDED', message: `The ${r.period} quota of ${r.limit} emails is used up` };
    case 'bulk-subject':
      return { code: 'BULK_LIMIT_EXCEEDED', message: `The daily limit of ${r.limit} bulk emails with the same subject is reached (${r.sentToday} sent today)` };
  }
}
