// auth/events.ts: what a sign-in event records (masked in the audit log, whole in webhooks only
// about a known user), which refusals count as failed sign-ins, the per-minute cap on
// sign_in.failed with the count of what it left out, and that a lost event never fails a sign-in.
import { afterEach, describe, expect, it } from 'vitest';
import { AuthEvents, FAILED_PER_MINUTE, maskEmail, maskPhone, type EventScope } from '../../auth/events.js';
import { RateLimiter } from '../../control/limits/rate-limit.js';
import type { AuditEntry, AuditLog, SessionRow, UserRow } from '../../control/store/index.js';
import { clock } from '../../core/clock.js';
import { ApiError } from '../../core/errors.js';
import { createLogger } from '../../core/log.js';

const log = createLogger('test', 'silent');
const scope: EventScope = { projectId: 'prj_a', env: 'live' };
const origin = { ip: '203.0.113.9', userAgent: 'Mozilla/5.0' };
const user: UserRow = {
  id: 'usr_1',
  projectId: 'prj_a',
  env: 'live',
  email: 'jane.doe@example.com',
  emailVerified: true,
  name: 'Jane',
  avatarUrl: null,
  phone: '+79161234567',
  username: null,
  provider: 'email',
  createdAt: 1,
  lastSignIn: null,
};
const session: SessionRow = {
  id: 'ses_1',
  projectId: 'prj_a',
  env: 'live',
  userId: 'usr_1',
  provider: 'email',
  ip: origin.ip,
  userAgent: origin.userAgent,
  createdAt: 1,
  expiresAt: 2,
};

/** An audit log that keeps what it is given. */
function recording(fail = false) {
  const entries: Array<{ entry: AuditEntry; data: Record<string, unknown> }> = [];
  let pruneBefore = 0;
  const audit: AuditLog = {
    async record(entry, data) {
      if (fail) throw new Error('database away');
      entries.push({ entry, data });
    },
    async list() {
      return undefined;
    },
    async activity() {
      return [];
    },
    async prune(before) {
      pruneBefore = before;
      return 0;
    },
  };
  return { audit, entries, pruned: () => pruneBefore };
}

afterEach(() => clock.setOffset(0));

describe('masks', () => {
  it('maskEmail keeps the first letter and the domain', () => {
    expect(maskEmail('jane.doe@example.com')).toBe('j***@example.com');
    expect(maskEmail('a@b.c')).toBe('a***@b.c');
    expect(maskEmail('user@sub@example.com')).toBe('u***@example.com');
    expect(maskEmail('@example.com')).toBe('***');
    expect(maskEmail('no-at-sign')).toBe('***');
  });

  it('maskPhone keeps three first and two last characters', () => {
    expect(maskPhone('+79161234567')).toBe('+79*******67');
    expect(maskPhone('1234567')).toBe('123**67');
    expect(maskPhone('123456')).toBe('***');
  });
});

describe('events of a known user', () => {
  it('session.created: masked in the audit log, whole in the webhook data; no token or code anywhere', async () => {
    const r = recording();
    await new AuthEvents({ audit: r.audit, limiter: new RateLimiter(), log }).sessionCreated(scope, user, session);
    const [{ entry, data }] = r.entries as [(typeof r.entries)[0]];
    expect(entry).toMatchObject({
      type: 'session.created',
      projectId: 'prj_a',
      env: 'live',
      userId: 'usr_1',
      sessionId: 'ses_1',
      email: 'j***@example.com',
      phone: '+79*******67',
      ip: origin.ip,
    });
    expect(entry.id).toMatch(/^evt_\w+$/);
    expect(data).toMatchObject({ id: entry.id, email: 'jane.doe@example.com', phone: '+79161234567', user_id: 'usr_1', session_id: 'ses_1' });
    expect(data).not.toHaveProperty('suppressed');
    expect(data.created_at).toBe(new Date(entry.at).toISOString());
  });

  it('user.created and session.revoked carry their ids and reason; a user agent is cut to 512 characters', async () => {
    const r = recording();
    const events = new AuthEvents({ audit: r.audit, limiter: new RateLimiter(), log });
    await events.userCreated(scope, user, { ip: null, userAgent: 'x'.repeat(5000) });
    await events.sessionRevoked(scope, { sessionId: 'ses_1', userId: 'usr_1' }, 'code_reused');
    expect(r.entries[0]!.entry).toMatchObject({ type: 'user.created', provider: 'email' });
    expect(r.entries[0]!.entry.userAgent).toHaveLength(512);
    expect(r.entries[1]!.entry).toMatchObject({ type: 'session.revoked', userId: 'usr_1', sessionId: 'ses_1', reason: 'code_reused', email: null });
    expect(new Set(r.entries.map((e) => e.entry.id)).size).toBe(2);
  });
});

describe('failed sign-ins', () => {
  it('name the typed address masked, in the webhook too (it may be anyone’s)', async () => {
    const r = recording();
    await new AuthEvents({ audit: r.audit, limiter: new RateLimiter(), log }).signInFailed(scope, { email: 'victim@example.com' }, 'invalid_code', origin);
    const [{ entry, data }] = r.entries as [(typeof r.entries)[0]];
    expect(entry).toMatchObject({ type: 'sign_in.failed', email: 'v***@example.com', reason: 'invalid_code', userId: null, suppressed: 0 });
    expect(data.email).toBe('v***@example.com');
    expect(data.suppressed).toBe(0);
  });

  it(`at most ${FAILED_PER_MINUTE} a minute per project, environment and reason; the next one let through counts those left out`, async () => {
    const r = recording();
    const events = new AuthEvents({ audit: r.audit, limiter: new RateLimiter(), log });
    for (let i = 0; i < FAILED_PER_MINUTE + 7; i++) await events.signInFailed(scope, {}, 'invalid_code');
    expect(r.entries).toHaveLength(FAILED_PER_MINUTE);
    // Another reason, environment or project has its own allowance.
    await events.signInFailed(scope, {}, 'code_expired');
    await events.signInFailed({ ...scope, env: 'test' }, {}, 'invalid_code');
    await events.signInFailed({ ...scope, projectId: 'prj_b' }, {}, 'invalid_code');
    expect(r.entries).toHaveLength(FAILED_PER_MINUTE + 3);
    expect(r.entries.every((e) => e.entry.suppressed === 0)).toBe(true);

    clock.setOffset(61_000);
    await events.signInFailed(scope, {}, 'invalid_code');
    await events.signInFailed(scope, {}, 'invalid_code');
    expect(r.entries.slice(-2).map((e) => e.entry.suppressed)).toEqual([7, 0]);
  });

  it('watch records the refusals that are failed sign-ins, passes every error on, and records nothing else', async () => {
    const r = recording();
    const events = new AuthEvents({ audit: r.audit, limiter: new RateLimiter(), log });
    const refuse = (err: Error) => events.watch(scope, { phone: '+15550001111' }, origin, async () => Promise.reject(err));
    await expect(refuse(new ApiError('INVALID_CODE', 'no'))).rejects.toMatchObject({ code: 'INVALID_CODE' });
    await expect(refuse(new ApiError('TOO_MANY_ATTEMPTS', 'no'))).rejects.toMatchObject({ code: 'TOO_MANY_ATTEMPTS' });
    await expect(refuse(new ApiError('RATE_LIMIT_EXCEEDED', 'no'))).rejects.toMatchObject({ code: 'RATE_LIMIT_EXCEEDED' });
    await expect(refuse(new ApiError('INVALID_REQUEST', 'bad input'))).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    await expect(refuse(new Error('a bug'))).rejects.toThrow('a bug');
    expect(r.entries.map((e) => e.entry.reason)).toEqual(['invalid_code', 'too_many_attempts', 'rate_limited']);
    expect(r.entries[0]!.entry.phone).toBe('+15*******11');
    await expect(events.watch(scope, {}, origin, async () => 'ok')).resolves.toBe('ok');
    expect(r.entries).toHaveLength(3);
  });
});

it('an event the audit log cannot take is logged and dropped: the sign-in it reports goes on', async () => {
  const r = recording(true);
  await expect(new AuthEvents({ audit: r.audit, limiter: new RateLimiter(), log }).sessionCreated(scope, user, session)).resolves.toBeUndefined();
});

it('prune deletes what is older than the retention', async () => {
  const r = recording();
  await new AuthEvents({ audit: r.audit, limiter: new RateLimiter(), log }).prune(30);
  expect(Math.abs(r.pruned() - (clock.now() - 30 * 86_400_000))).toBeLessThan(1000);
});
