// What every store backend must do, whatever engine is behind it: the atomic intents
// (acceptance under quota and bulk rules, delivery events with their cursor, one-time
// sign-in secrets) and the orders callers rely on (recipient positions behind tokens).
// A backend's test file calls describeStore with a way to open a fresh, empty store.
import crypto from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AcceptGuards, AuditEntry, GatewayEvent, NewEmail, OperatorAuditEntry, Store, SuspensionRow } from '../../../control/store/index.js';
import { DEFAULT_DOMAIN_SETTINGS } from '../../../control/store/index.js';
import { uuidv7 } from '../../../core/ids.js';
import { describeEmailSearch } from './email-search-cases.js';
import { describeTemplates } from './templates-cases.js';
import { describeTracking } from './tracking-cases.js';
import { describeInbound } from './inbound-cases.js';
import { describeConsoleReads } from './console-reads.js';

export interface StoreFixture {
  store: Store;
  /** Closes the store and opens the same data again (absent: the backend keeps nothing across a restart to test). */
  reopen?: () => Promise<Store>;
  /** Closes what is open and drops the data. */
  cleanup: () => Promise<void>;
}

const sha = (s: string) => crypto.createHash('sha256').update(s).digest('hex');

export function describeStore(name: string, open: () => Promise<StoreFixture>): void {
  describe(`store conformance: ${name}`, () => {
    let fx: StoreFixture;
    let store: Store;
    let projectId: string;
    const now = Date.now();

    beforeEach(async () => {
      fx = await open();
      store = fx.store;
      projectId = `prj_${crypto.randomUUID().slice(0, 8)}`;
      await store.projects.create({ id: projectId, slug: projectId, name: 'Conformance', plan: 'free', createdAt: now }, []);
    });

    afterEach(async () => {
      await fx.cleanup();
    });

    const reopen = async () => {
      if (!fx.reopen) return;
      store = await fx.reopen();
    };

    const email = ({ to = ['r@inbox.test'], ...o }: Partial<NewEmail> & { to?: string[] } = {}): NewEmail => {
      const subject = o.subject ?? 'Hello';
      return {
        id: uuidv7(o.createdAt ?? now),
        projectId,
        status: 'queued',
        from: 'a@acme.test',
        subject,
        bulk: false,
        createdAt: now,
        request: JSON.stringify({ from: 'a@acme.test', to, cc: [], bcc: [], reply_to: [], subject, text: 't', tags: [], headers: {}, bulk: !!o.bulk }),
        recipients: to.map((address) => ({ address, kind: 'to' as const })),
        ...o,
      };
    };

    /** A gateway event of email `emailId`, at now + seq, first attempt, no details. */
    const gatewayEvent = (seq: number, emailId: string, type: GatewayEvent['type'], recipient: string, o: Partial<GatewayEvent> = {}): GatewayEvent => ({
      seq,
      emailId,
      type,
      recipient,
      at: now + seq,
      attempt: 1,
      details: {},
      ...o,
    });

    describe('emails.accept', () => {
      it('a quota running out midway through a batch: the first are accepted, the rest refused as data and not recorded', async () => {
        const list = Array.from({ length: 8 }, () => email());
        const outcomes = await Promise.all(store.emails.acceptMany(list, { quota: { daily: 5, monthly: 100 } }));
        expect(outcomes.slice(0, 5)).toEqual(Array(5).fill({ kind: 'accepted' }));
        expect(outcomes.slice(5)).toEqual(Array(3).fill({ kind: 'quota', period: 'daily', limit: 5 }));
        for (const [i, e] of list.entries()) expect(Boolean(await store.emails.get(projectId, e.id))).toBe(i < 5);
        expect(await store.analytics.usage(projectId, now)).toEqual({ day: 5, month: 5 });
        expect(await store.analytics.daily(projectId, '0000-00-00', '9999-99-99')).toEqual([
          { day: new Date(now).toISOString().slice(0, 10), status: 'queued', count: 5 },
        ]);
        // The monthly quota is judged the same way.
        expect(await store.emails.accept(email(), { quota: { daily: 100, monthly: 5 } })).toEqual({ kind: 'quota', period: 'monthly', limit: 5 });
        // Mail refused at ingestion is recorded as failed, outside the quota.
        const failed = email({ status: 'failed', error: 'Every recipient is in the suppression list', errorCode: 'RECIPIENT_IN_SUPPRESSION_LIST' });
        expect(await store.emails.accept(failed, { quota: { daily: 5, monthly: 100 } })).toEqual({ kind: 'accepted' });
        expect((await store.emails.get(projectId, failed.id))?.email.status).toBe('failed');
      });

      it('keeps attachment bytes once, with the email (durable across a reopen), in order; a refused email keeps none', async () => {
        const files = [crypto.randomBytes(70_000), Buffer.alloc(0), Buffer.from([0, 255, 13, 10, 46])];
        const e = email({ attachments: files });
        const failed = email({ status: 'failed', error: 'x', errorCode: 'DOMAIN_NOT_VERIFIED', attachments: [Buffer.from('never sent')] });
        const [a, b] = await Promise.all(store.emails.acceptMany([e, failed]));
        expect([a, b]).toEqual([{ kind: 'accepted' }, { kind: 'accepted' }]);
        await reopen();
        const stored = await store.emails.attachments(e.id);
        expect(stored.map((x) => Buffer.from(x).toString('hex'))).toEqual(files.map((x) => x.toString('hex')));
        expect(await store.emails.attachments(failed.id)).toEqual([]);
        expect(await store.emails.attachments(email().id)).toEqual([]);
      });

      const bulkRules = (o: Partial<NonNullable<AcceptGuards['bulk']>> = {}): AcceptGuards => ({
        bulk: { subjectLimit: 1000, spike: { factor: 3, floor: 1000, days: 7 }, ...o },
      });

      it('the bulk same-subject limit refuses the email that would pass it; case and spacing do not make a new subject', async () => {
        const guards = bulkRules({ subjectLimit: 3 });
        expect(await store.emails.accept(email({ bulk: true, subject: 'Big  News', to: ['a@inbox.test', 'b@inbox.test'] }), guards)).toEqual({
          kind: 'accepted',
        });
        const over = email({ bulk: true, subject: 'big news', to: ['c@inbox.test', 'd@inbox.test'] });
        expect(await store.emails.accept(over, guards)).toEqual({ kind: 'bulk-subject', limit: 3, sentToday: 2 });
        expect(await store.emails.get(projectId, over.id)).toBeUndefined();
        // Another subject, or transactional mail, is not counted against it.
        expect(await store.emails.accept(email({ bulk: true, subject: 'Other news', to: ['c@inbox.test', 'd@inbox.test'] }), guards)).toEqual({
          kind: 'accepted',
        });
        expect(await store.emails.accept(email({ subject: 'Big news', to: ['c@inbox.test', 'd@inbox.test'] }), guards)).toEqual({ kind: 'accepted' });
        expect(await store.emails.accept(email({ bulk: true, subject: 'BIG NEWS', to: ['e@inbox.test'] }), guards)).toEqual({ kind: 'accepted' });
      });

      it('the bulk volume hold: a spike is recorded but held back until announced or approved', async () => {
        const guards = bulkRules({ spike: { factor: 3, floor: 2, days: 7 } });
        const spike = email({ bulk: true, to: ['a@inbox.test', 'b@inbox.test', 'c@inbox.test'] });
        const accepted = await store.emails.accept(spike, guards);
        expect(accepted).toMatchObject({ kind: 'accepted', held: expect.stringContaining('bulk volume today (3)') });
        expect((await store.emails.undispatched(100)).map((e) => e.id)).not.toContain(spike.id);
        const stored = await store.emails.get(projectId, spike.id);
        expect(stored?.events.map((e) => e.type)).toEqual(['queued', 'deferred']);
        expect(stored?.events[1]?.details).toMatchObject({ cause: 'volume' });
        expect(await store.pacing.bulkVolume(projectId, now, 7)).toMatchObject({ today: 3, held: 1 });
        expect(await store.pacing.heldByProject()).toEqual([{ projectId, held: 1 }]);
        // An announcement for today lets the next spike through; the operator releases what is held.
        await store.pacing.addAllowance(projectId, new Date(now).toISOString().slice(0, 10), 100, 'project', now);
        expect(await store.emails.accept(email({ bulk: true, to: ['d@inbox.test', 'e@inbox.test', 'f@inbox.test'] }), guards)).toEqual({ kind: 'accepted' });
        expect(await store.pacing.releaseHeld(projectId)).toBe(1);
        expect(await store.pacing.heldByProject()).toEqual([]);
        expect((await store.emails.undispatched(100)).map((e) => e.id)).toContain(spike.id);
      });
    });

    it('recipient order behind unsubscribe and VERP tokens: position n is the n-th recipient, across a reopen', async () => {
      const e = email({
        to: ['zed@inbox.test', 'amy@inbox.test'],
        recipients: [
          { address: 'zed@inbox.test', kind: 'to' },
          { address: 'amy@inbox.test', kind: 'to' },
          { address: 'mia@inbox.test', kind: 'cc' },
          { address: 'bob@inbox.test', kind: 'bcc' },
        ],
      });
      await store.emails.accept(e);
      // Another email in between, so no engine order (insertion, key) happens to give the answer.
      await store.emails.accept(email({ to: ['aaa@inbox.test'] }));
      const order = ['zed@inbox.test', 'amy@inbox.test', 'mia@inbox.test', 'bob@inbox.test'];
      const check = async () => {
        for (const [i, address] of order.entries()) expect(await store.emails.recipientAt(e.id, i)).toBe(address);
        expect(await store.emails.recipientAt(e.id, order.length)).toBeUndefined();
        expect((await store.emails.get(projectId, e.id))?.recipients.map((r) => r.address)).toEqual(order);
        expect((await store.emails.undispatched(100)).find((x) => x.id === e.id)?.recipients.map((r) => r.address)).toEqual(order);
      };
      await check();
      await reopen();
      await check();
      // A report that names its recipient by position reaches that recipient.
      const [applied] = await store.deliveryLog.apply('gw', [
        { seq: 1, emailId: e.id, type: 'bounced', recipient: '', recipientIndex: 2, at: now, attempt: 1, details: {} },
      ]);
      expect(applied).toMatchObject({ recipient: 'mia@inbox.test', emailStatus: 'sending' });
      expect((await store.suppressions.list(projectId)).find((x) => x.address === 'mia@inbox.test')?.scope).toBe('all');
    });

    it('accept judges suppressions in its transaction: a suppressed recipient fails, an email with none left is recorded failed', async () => {
      const e = email({ to: ['s1@inbox.test'], recipients: [{ address: 's1@inbox.test', kind: 'to' }] });
      await store.emails.accept(e);
      await store.deliveryLog.apply('gw-scopes', [{ seq: 1, emailId: e.id, type: 'bounced', recipient: 's1@inbox.test', at: now, attempt: 1, details: {} }]);
      await store.suppressions.unsubscribe(projectId, e.id, 's2@inbox.test', 'one-click', now);
      const guards = { suppressions: true, quota: { daily: 1000, monthly: 1000 } };
      const statuses = async (id: string) => {
        const got = (await store.emails.get(projectId, id))!;
        return { status: got.email.status, errorCode: got.email.errorCode, recipients: Object.fromEntries(got.recipients.map((r) => [r.address, r.status])) };
      };
      const usage = await store.analytics.usage(projectId, now);
      // Bounced (scope all) fails in any mail; unsubscribed (scope bulk) only in bulk mail; quoting in addresses is no SQL.
      const to = ['s1@inbox.test', 's2@inbox.test', 'free@inbox.test', 'quote"d@inbox.test', "o'hara@inbox.test"];
      const plain = email({ to });
      const bulk = email({ to, bulk: true });
      expect(await Promise.all(store.emails.acceptMany([plain, bulk], guards))).toEqual([{ kind: 'accepted' }, { kind: 'accepted' }]);
      expect(await statuses(plain.id)).toEqual({
        status: 'queued',
        errorCode: null,
        recipients: {
          's1@inbox.test': 'failed',
          's2@inbox.test': 'queued',
          'free@inbox.test': 'queued',
          'quote"d@inbox.test': 'queued',
          "o'hara@inbox.test": 'queued',
        },
      });
      expect((await statuses(bulk.id)).recipients).toMatchObject({ 's1@inbox.test': 'failed', 's2@inbox.test': 'failed', 'free@inbox.test': 'queued' });
      // The email the caller passed is not changed: the store may judge it again (a group run again).
      expect(plain.recipients.every((r) => r.status === undefined)).toBe(true);
      // Every recipient suppressed: recorded as failed with the suppression's code, not counted against the quota.
      const none = email({ to: ['s1@inbox.test', 's2@inbox.test'], bulk: true });
      expect(await store.emails.accept(none, guards)).toEqual({ kind: 'suppressed' });
      expect(await statuses(none.id)).toEqual({
        status: 'failed',
        errorCode: 'RECIPIENT_IN_SUPPRESSION_LIST',
        recipients: { 's1@inbox.test': 'failed', 's2@inbox.test': 'failed' },
      });
      expect(await store.analytics.usage(projectId, now)).toEqual({ day: usage.day + 2, month: usage.month + 2 });
      // An email refused already (its sender domain) keeps its own error, whoever its recipients are.
      const refused = email({
        to: ['s1@inbox.test'],
        status: 'failed',
        error: 'The sender domain acme.test is not verified',
        errorCode: 'DOMAIN_NOT_VERIFIED',
        recipients: [{ address: 's1@inbox.test', kind: 'to', status: 'failed' }],
      });
      expect(await store.emails.accept(refused, guards)).toEqual({ kind: 'accepted' });
      expect(await statuses(refused.id)).toEqual({ status: 'failed', errorCode: 'DOMAIN_NOT_VERIFIED', recipients: { 's1@inbox.test': 'failed' } });
      // Without the guard (the platform's refused mail, a released schedule) nothing is looked up.
      const unguarded = email({ to: ['s1@inbox.test'] });
      expect(await store.emails.accept(unguarded)).toEqual({ kind: 'accepted' });
      expect((await statuses(unguarded.id)).recipients).toEqual({ 's1@inbox.test': 'queued' });
      // Another project's list does not apply.
      const otherProjectId = `prj_${crypto.randomUUID().slice(0, 8)}`;
      await store.projects.create({ id: otherProjectId, slug: otherProjectId, name: 'Other', plan: 'free', createdAt: now }, []);
      const other = email({ to: ['s1@inbox.test'], projectId: otherProjectId });
      expect(await store.emails.accept(other, guards)).toEqual({ kind: 'accepted' });
    });

    it('gateway events applied twice are counted once, and the cursor survives a reopen', async () => {
      const e = email();
      await store.emails.accept(e);
      const events = (): GatewayEvent[] => [
        { seq: 1, emailId: e.id, type: 'deferred', recipient: 'r@inbox.test', at: now + 1, attempt: 1, details: { response: '451 try later' } },
        { seq: 2, emailId: e.id, type: 'sent', recipient: 'r@inbox.test', at: now + 2, attempt: 2, details: { response: '250 ok' } },
      ];
      expect((await store.deliveryLog.apply('gw-a', events())).map((a) => a.emailStatus)).toEqual(['sending', 'sent']);
      expect(await store.deliveryLog.apply('gw-a', events())).toEqual([]);
      // The same outcomes again under new sequence numbers (a gateway that lost its outbox) change nothing either.
      expect(
        await store.deliveryLog.apply(
          'gw-a',
          events().map((x) => ({ ...x, seq: x.seq + 10 })),
        ),
      ).toEqual([]);
      expect(await store.deliveryLog.cursor('gw-a')).toBe(12);
      expect(await store.deliveryLog.cursor('gw-b')).toBe(0);
      // What the stream acknowledges to the gateway: every run recorded so far is on disk.
      await store.deliveryLog.durable();
      await reopen();
      expect(await store.deliveryLog.cursor('gw-a')).toBe(12);
      expect(await store.deliveryLog.apply('gw-a', events())).toEqual([]);
      const stored = await store.emails.get(projectId, e.id);
      expect(stored?.email.status).toBe('sent');
      expect(stored?.events.map((x) => x.type)).toEqual(['queued', 'deferred', 'sent']);
      const counts = Object.fromEntries((await store.analytics.daily(projectId, '0000-00-00', '9999-99-99')).map((r) => [r.status, r.count]));
      expect(counts).toEqual({ queued: 1, sending: 1, sent: 1 });
    });

    it('several events of one email in one run: each sees the state the one before left, the status is counted once', async () => {
      const e = email({ to: ['a@inbox.test', 'b@inbox.test'] });
      await store.emails.accept(e);
      const ev = (seq: number, type: GatewayEvent['type'], recipient: string) => gatewayEvent(seq, e.id, type, recipient);
      // Both recipients start sending (the email stays sending), then both are sent.
      const run = [ev(1, 'sending', 'a@inbox.test'), ev(2, 'sending', 'b@inbox.test'), ev(3, 'sent', 'a@inbox.test'), ev(4, 'sent', 'b@inbox.test')];
      expect((await store.deliveryLog.apply('gw-run', run)).map((a) => a.emailStatus)).toEqual(['sending', 'sending', 'sending', 'sent']);
      const stored = await store.emails.get(projectId, e.id);
      expect(stored?.email.status).toBe('sent');
      expect(Object.fromEntries(stored!.recipients.map((r) => [r.address, r.status]))).toEqual({ 'a@inbox.test': 'sent', 'b@inbox.test': 'sent' });
      const counts = Object.fromEntries((await store.analytics.daily(projectId, '0000-00-00', '9999-99-99')).map((r) => [r.status, r.count]));
      expect(counts).toEqual({ queued: 1, sending: 1, sent: 1 });
    });

    it('one run mixing repeats, reports by position and suppressions leaves what the events one by one would', async () => {
      const a = email({ to: ['x@inbox.test', 'y@inbox.test'], bulk: true });
      const b = email({ to: ['x@inbox.test'] });
      const c = email({ to: ['y@inbox.test'] });
      for (const e of [a, b, c]) await store.emails.accept(e);
      const run = [
        gatewayEvent(1, a.id, 'sent', 'x@inbox.test'),
        // The same outcome again in the same run: recorded once.
        gatewayEvent(2, a.id, 'sent', 'x@inbox.test'),
        // A report naming its recipient by position (an unsubscribe of a's second recipient).
        gatewayEvent(3, a.id, 'unsubscribed', '', { recipientIndex: 1 }),
        // x bounces in two emails of the run: suppressed once, scope all, by the first bounce.
        gatewayEvent(4, b.id, 'bounced', 'x@inbox.test'),
        gatewayEvent(5, a.id, 'bounced', 'x@inbox.test', { attempt: 2 }),
        // y, unsubscribed from bulk mail above, then bounces: its scope becomes all.
        gatewayEvent(6, c.id, 'bounced', 'y@inbox.test'),
        // A position the email does not have, and an email that does not exist: skipped.
        gatewayEvent(7, b.id, 'unsubscribed', '', { recipientIndex: 4 }),
        gatewayEvent(8, uuidv7(now), 'sent', 'x@inbox.test'),
      ];
      const applied = await store.deliveryLog.apply('gw-mix', run);
      expect(applied.map((x) => [x.seq, x.emailStatus])).toEqual([
        [1, 'sending'],
        [3, 'sending'],
        [4, 'bounced'],
        [5, 'sending'],
        [6, 'bounced'],
      ]);
      expect(applied[1]?.recipient).toBe('y@inbox.test');
      expect(await store.deliveryLog.cursor('gw-mix')).toBe(8);
      const recipients = async (id: string) => Object.fromEntries((await store.emails.get(projectId, id))!.recipients.map((r) => [r.address, r.status]));
      expect(await recipients(a.id)).toEqual({ 'x@inbox.test': 'bounced', 'y@inbox.test': 'queued' });
      expect(await recipients(b.id)).toEqual({ 'x@inbox.test': 'bounced' });
      expect(await recipients(c.id)).toEqual({ 'y@inbox.test': 'bounced' });
      const stored = await store.emails.get(projectId, a.id);
      expect(stored?.email.status).toBe('sending');
      expect(stored?.events.map((x) => `${x.type}:${x.recipient}`)).toEqual([
        'queued:',
        'sent:x@inbox.test',
        'unsubscribed:y@inbox.test',
        'bounced:x@inbox.test',
      ]);
      const suppressions = (await store.suppressions.list(projectId)).map((s) => [s.address, s.scope, s.reason, s.emailId]).sort();
      expect(suppressions).toEqual([
        ['x@inbox.test', 'all', 'bounced', b.id],
        ['y@inbox.test', 'all', 'bounced', c.id],
      ]);
      // Applied again, nothing changes.
      expect(
        await store.deliveryLog.apply(
          'gw-mix',
          run.map((x) => ({ ...x, seq: x.seq + 10 })),
        ),
      ).toEqual([]);
    });

    describe('scheduled emails and listing', () => {
      const later = now + 3600_000;
      const scheduled = (o: Partial<NewEmail> = {}) => email({ status: 'scheduled', scheduledAt: later, ...o });

      it('a scheduled email is not dispatched nor counted; released when due, it is judged then (quota) and queued or failed', async () => {
        const [s1, s2] = [scheduled(), scheduled()];
        // Accepted beyond a quota of one: nothing is counted while they wait.
        expect(await store.emails.accept(s1, { quota: { daily: 1, monthly: 100 } })).toEqual({ kind: 'accepted' });
        expect(await store.emails.accept(s2, { quota: { daily: 1, monthly: 100 } })).toEqual({ kind: 'accepted' });
        expect(await store.emails.undispatched(10)).toEqual([]);
        expect(await store.analytics.usage(projectId, now)).toEqual({ day: 0, month: 0 });
        expect(await store.emails.due(later - 1, 10)).toEqual([]);
        const counted = await store.emails.countScheduled();
        expect(counted).toBeGreaterThanOrEqual(2);
        const due = await store.emails.due(later, 10);
        expect(due.map((d) => d.id).sort()).toEqual([s1.id, s2.id].sort());
        const guards = { quota: { daily: 1, monthly: 100 } };
        expect(await store.emails.release(s1.id, guards, later)).toEqual({ kind: 'accepted' });
        expect(await store.emails.release(s2.id, guards, later)).toEqual({ kind: 'quota', period: 'daily', limit: 1 });
        // Released twice is released once.
        expect(await store.emails.release(s1.id, guards, later)).toEqual({ kind: 'gone' });
        // Released (queued or failed), neither waits any more.
        expect(await store.emails.countScheduled()).toBe(counted - 2);
        expect(await store.analytics.usage(projectId, later)).toEqual({ day: 1, month: 1 });
        expect((await store.emails.undispatched(10)).map((e) => e.id)).toEqual([s1.id]);
        const [g1, g2] = [await store.emails.get(projectId, s1.id), await store.emails.get(projectId, s2.id)];
        expect(g1?.email).toMatchObject({ status: 'queued', scheduledAt: later });
        expect(g1?.events.map((e) => e.type)).toEqual(['scheduled', 'queued']);
        expect(g2?.email).toMatchObject({ status: 'failed', errorCode: 'QUOTA_EXCEEDED' });
        expect(g2?.recipients.map((r) => r.status)).toEqual(['failed']);
        expect(await store.emails.due(later, 10)).toEqual([]);
      });

      it('reschedule and cancel change only a scheduled email of the same project, across a reopen', async () => {
        const s = scheduled();
        await store.emails.accept(s);
        expect(await store.emails.reschedule(projectId, s.id, later + 60_000, now)).toEqual({ kind: 'done' });
        expect(await store.emails.reschedule('prj_other', s.id, later, now)).toEqual({ kind: 'not_found' });
        await reopen();
        expect((await store.emails.get(projectId, s.id))?.email.scheduledAt).toBe(later + 60_000);
        expect(await store.emails.due(later, 10)).toEqual([]);
        expect(await store.emails.cancel(projectId, s.id, now)).toEqual({ kind: 'done' });
        expect(await store.emails.cancel(projectId, s.id, now)).toEqual({ kind: 'not_scheduled', status: 'canceled' });
        expect(await store.emails.release(s.id, {}, later + 60_000)).toEqual({ kind: 'gone' });
        const got = await store.emails.get(projectId, s.id);
        expect(got?.email.status).toBe('canceled');
        expect(got?.recipients.map((r) => r.status)).toEqual(['canceled']);
        const q = email();
        await store.emails.accept(q);
        expect(await store.emails.cancel(projectId, q.id, now)).toEqual({ kind: 'not_scheduled', status: 'queued' });
      });

      it('list: newest first, cursors both ways, filters by status, tag and time', async () => {
        const list = Array.from({ length: 5 }, (_, i) =>
          email({
            id: uuidv7(now + i),
            createdAt: now + i,
            request: JSON.stringify({
              from: 'a@acme.test',
              to: ['r@inbox.test'],
              cc: [],
              bcc: [],
              reply_to: [],
              subject: 'Hello',
              text: 't',
              tags: i % 2 ? ['odd', 'k:v'] : ['even'],
              headers: {},
            }),
          }),
        );
        for (const e of list) await store.emails.accept(e);
        const ids = list.map((e) => e.id);
        const page1 = await store.emails.list(projectId, { limit: 2 });
        expect(page1.emails.map((e) => e.id)).toEqual([ids[4], ids[3]]);
        expect(page1.hasMore).toBe(true);
        const page3 = await store.emails.list(projectId, { limit: 2, after: ids[1] });
        expect(page3).toMatchObject({ hasMore: false });
        expect(page3.emails.map((e) => e.id)).toEqual([ids[0]]);
        const back = await store.emails.list(projectId, { limit: 2, before: ids[0] });
        expect(back.emails.map((e) => e.id)).toEqual([ids[2], ids[1]]);
        expect(back.hasMore).toBe(true);
        expect((await store.emails.list(projectId, { limit: 10, tag: 'k:v' })).emails.map((e) => e.id)).toEqual([ids[3], ids[1]]);
        expect((await store.emails.list(projectId, { limit: 10, since: now + 1, until: now + 2 })).emails.map((e) => e.id)).toEqual([ids[2], ids[1]]);
        expect((await store.emails.list(projectId, { limit: 10, status: 'failed' })).emails).toEqual([]);
        expect((await store.emails.list('prj_other', { limit: 10 })).emails).toEqual([]);
      });
    });

    describeEmailSearch({ store: () => store, projectId: () => projectId, now });
    describeTemplates({ store: () => store, projectId: () => projectId, now });
    describeTracking({ store: () => store, projectId: () => projectId, now });
    describeInbound({ store: () => store, projectId: () => projectId, now });

    it('domains.list: every domain in (created_at, name) order, or pages with limit and a cursor both ways; a foreign cursor is refused', async () => {
      const domain = (name: string, createdAt: number) => ({
        id: crypto.randomUUID(),
        projectId,
        name,
        status: 'pending' as const,
        selector: 's',
        dkimPrivate: 'k',
        dkimPublic: 'p',
        records: [],
        createdAt,
      });
      // Two created in the same millisecond: the name orders them.
      const ds = [domain('a.test', now), domain('b.test', now + 1), domain('d.test', now + 2), domain('c.test', now + 2), domain('e.test', now + 3)];
      for (const d of ds) await store.domains.create(d);
      const names = (p: { domains: Array<{ name: string }> } | undefined) => p?.domains.map((d) => d.name);
      const all = await store.domains.list(projectId);
      expect(names(all)).toEqual(['a.test', 'b.test', 'c.test', 'd.test', 'e.test']);
      expect(all?.hasMore).toBe(false);
      const first = await store.domains.list(projectId, { limit: 2 });
      expect(names(first)).toEqual(['a.test', 'b.test']);
      expect(first?.hasMore).toBe(true);
      const byName = Object.fromEntries(ds.map((d) => [d.name, d.id]));
      const second = await store.domains.list(projectId, { limit: 2, after: byName['b.test'] });
      expect(names(second)).toEqual(['c.test', 'd.test']);
      expect(second?.hasMore).toBe(true);
      const last = await store.domains.list(projectId, { limit: 2, after: byName['d.test'] });
      expect(names(last)).toEqual(['e.test']);
      expect(last?.hasMore).toBe(false);
      const back = await store.domains.list(projectId, { limit: 2, before: byName['d.test'] });
      expect(names(back)).toEqual(['b.test', 'c.test']);
      expect(back?.hasMore).toBe(true);
      expect(names(await store.domains.list(projectId, { after: byName['c.test'] }))).toEqual(['d.test', 'e.test']);
      await reopen();
      expect(names(await store.domains.list(projectId, { limit: 1, before: byName['b.test'] }))).toEqual(['a.test']);
      // A cursor of another project, or of nothing, names no place in this list.
      await store.projects.create({ id: `${projectId}_b`, slug: `${projectId}_b`, name: 'Other', plan: 'free', createdAt: now }, []);
      const foreign = domain('f.test', now);
      await store.domains.create({ ...foreign, projectId: `${projectId}_b` });
      expect(await store.domains.list(projectId, { limit: 2, after: foreign.id })).toBeUndefined();
      expect(await store.domains.list(projectId, { before: 'not-an-id' })).toBeUndefined();
      expect(names(await store.domains.list(`${projectId}_b`))).toEqual(['f.test']);
    });

    it("domain settings: defaults at creation, replaced with the records, kept across a reopen, not another project's", async () => {
      const d = {
        id: crypto.randomUUID(),
        projectId,
        name: 'settings.test',
        status: 'pending' as const,
        selector: 's',
        dkimPrivate: 'k',
        dkimPublic: 'p',
        records: [],
        createdAt: now,
      };
      await store.domains.create(d);
      expect((await store.domains.get(projectId, d.id))?.settings).toEqual(DEFAULT_DOMAIN_SETTINGS);
      const settings = { openTracking: true, clickTracking: true, tls: 'enforced' as const, trackingSubdomain: 'go', receiving: true };
      const records = [{ purpose: 'tracking', type: 'CNAME', name: 'go.settings.test', value: 'track.example.net', status: 'pending' }];
      expect(await store.domains.updateSettings(`${projectId}_other`, d.id, DEFAULT_DOMAIN_SETTINGS, [])).toBe(false);
      expect(await store.domains.updateSettings(projectId, d.id, settings, records)).toBe(true);
      await reopen();
      const after = await store.domains.get(projectId, d.id);
      expect(after?.settings).toEqual(settings);
      expect(after?.records).toEqual(records);
      const made = { ...d, id: crypto.randomUUID(), name: 'made.test', settings: { ...settings, receiving: false } };
      await store.domains.create(made);
      expect((await store.domains.byName(projectId, 'made.test'))?.settings).toEqual(made.settings);
      expect(await store.domains.updateSettings(projectId, 'no-such-domain', settings, [])).toBe(false);
    });

    it('caches follow writes: a domain verified or a webhook added counts at once', async () => {
      const d = {
        id: crypto.randomUUID(),
        projectId,
        name: 'acme.test',
        status: 'pending' as const,
        selector: 's',
        dkimPrivate: 'k',
        dkimPublic: 'p',
        records: [],
        createdAt: now,
      };
      await store.domains.create(d);
      expect(await store.domains.isVerified(projectId, 'acme.test')).toBe(false);
      await store.domains.update(d.id, 'verified', [], now, now);
      expect(await store.domains.isVerified(projectId, 'acme.test')).toBe(true);
      await store.domains.remove(projectId, d.id);
      expect(await store.domains.isVerified(projectId, 'acme.test')).toBe(false);

      await store.emails.accept(email());
      const hook = { id: crypto.randomUUID(), projectId, url: 'https://hooks.test/x', statuses: ['queued'], secret: 'sealed', createdAt: now };
      await store.webhooks.create(hook);
      const e = email();
      await store.emails.accept(e);
      const deliveries = await store.webhooks.deliveries(hook.id);
      expect(deliveries).toHaveLength(1);
      expect(JSON.parse(deliveries[0]!.payload)).toMatchObject({ type: 'email.queued', data: { email_id: e.id, status: 'queued', to: ['r@inbox.test'] } });
      await store.webhooks.remove(projectId, hook.id);
      await store.emails.accept(email());
      expect(await store.webhooks.due(now + 1, 10)).toEqual([]);
    });

    it('delivery events of several emails in one run queue a message for each change a webhook wants, with each email own request', async () => {
      const hook = { id: crypto.randomUUID(), projectId, url: 'https://hooks.test/x', statuses: ['sent', 'bounced'], secret: 'sealed', createdAt: now };
      await store.webhooks.create(hook);
      const a = email({ to: ['a@inbox.test'], subject: 'A' });
      const b = email({ to: ['b@inbox.test'], subject: 'B' });
      for (const e of [a, b]) await store.emails.accept(e);
      const run = [
        gatewayEvent(1, a.id, 'sending', 'a@inbox.test'),
        gatewayEvent(2, a.id, 'sent', 'a@inbox.test'),
        gatewayEvent(3, b.id, 'bounced', 'b@inbox.test'),
      ];
      expect(await store.deliveryLog.apply('gw-hooks', run)).toHaveLength(3);
      const sent = (await store.webhooks.deliveries(hook.id)).map((d) => JSON.parse(d.payload) as { type: string; data: Record<string, unknown> });
      expect(sent.map((p) => [p.type, p.data.email_id, p.data.to, p.data.subject]).sort()).toEqual(
        [
          ['email.bounced', b.id, ['b@inbox.test'], 'B'],
          ['email.sent', a.id, ['a@inbox.test'], 'A'],
        ].sort(),
      );
    });

    const hookRow = (o: { statuses?: string[]; url?: string } = {}) => ({
      id: crypto.randomUUID(),
      projectId,
      url: o.url ?? 'https://hooks.test/x',
      statuses: o.statuses ?? [],
      secret: 'sealed',
      createdAt: now,
    });

    it('webhooks.update: a new URL, filter or secret counts at once; disabled gets nothing and gives up its queue', async () => {
      const hook = hookRow({ statuses: ['queued'] });
      await store.webhooks.create(hook);
      expect(await store.webhooks.get(projectId, hook.id)).toEqual({ ...hook, enabled: true });
      await store.emails.accept(email());
      expect(await store.webhooks.due(now + 1, 10)).toHaveLength(1);

      const off = await store.webhooks.update(projectId, hook.id, { enabled: false });
      expect(off).toEqual({ ...hook, enabled: false });
      expect(await store.webhooks.due(now + 1, 10)).toEqual([]);
      expect((await store.webhooks.deliveries(hook.id)).map((d) => [d.status, d.lastError])).toEqual([['failed', 'endpoint disabled']]);
      await store.emails.accept(email());
      expect(await store.webhooks.deliveries(hook.id)).toHaveLength(1);

      const on = await store.webhooks.update(projectId, hook.id, { enabled: true, url: 'https://other.test/y', statuses: ['failed'], secret: 'resealed' });
      expect(on).toEqual({ ...hook, url: 'https://other.test/y', statuses: ['failed'], secret: 'resealed', enabled: true });
      await reopen();
      expect(await store.webhooks.byId(hook.id)).toEqual(on);
      await store.emails.accept(email());
      expect(await store.webhooks.deliveries(hook.id)).toHaveLength(1); // queued is no longer wanted
      const refused = email({ status: 'failed', error: 'x', errorCode: 'RECIPIENT_IN_SUPPRESSION_LIST' });
      await store.emails.accept(refused);
      expect(JSON.parse((await store.webhooks.due(now + 1, 10))[0]!.payload)).toMatchObject({ type: 'email.failed', data: { email_id: refused.id } });
      // Another project's endpoint is not found, and not changed.
      expect(await store.webhooks.update('prj_other', hook.id, { enabled: false })).toBeUndefined();
      expect((await store.webhooks.byId(hook.id))?.enabled).toBe(true);
    });

    describe('queue control (operations)', () => {
      const entry = (n: number, o: Partial<OperatorAuditEntry> = {}): OperatorAuditEntry => ({
        id: `op_${String(n).padStart(4, '0')}`,
        at: now + n,
        action: 'queue.suspend',
        actor: 'a1b2c3d4e5f6',
        target: 'provider:gmail',
        details: { reason: `r${n}`, nested: { n } },
        emails: null,
        ...o,
      });

      it('the operator audit log pages newest first, `before` towards older entries, across a reopen; a foreign cursor is refused', async () => {
        for (let n = 1; n <= 5; n++)
          await store.operations.audit(entry(n, n === 3 ? { action: 'queue.cancel', emails: 42, target: `project:${projectId}` } : {}));
        await reopen();
        const first = await store.operations.auditLog({ limit: 2 });
        expect(first?.entries.map((e) => e.id)).toEqual(['op_0005', 'op_0004']);
        expect(first?.hasMore).toBe(true);
        const next = await store.operations.auditLog({ limit: 2, before: 'op_0004' });
        expect(next?.entries).toEqual([entry(3, { action: 'queue.cancel', emails: 42, target: `project:${projectId}` }), entry(2)]);
        expect(next?.hasMore).toBe(true);
        expect(await store.operations.auditLog({ limit: 5, before: 'op_0002' })).toEqual({ entries: [entry(1)], hasMore: false });
        expect(await store.operations.auditLog({ limit: 5, before: 'op_none' })).toBeUndefined();
      });

      it('suspensions: those in force are listed (no end, or an end ahead), resume deletes one and returns it once', async () => {
        const s = (id: string, until: number | null, o: Partial<SuspensionRow> = {}): SuspensionRow => ({
          id,
          provider: 'gmail',
          projectId: '',
          until,
          reason: 'incident',
          createdAt: now,
          ...o,
        });
        await store.operations.suspend(s('sus_a', null));
        await store.operations.suspend(s('sus_b', now + 60_000, { provider: '', projectId }));
        await store.operations.suspend(s('sus_c', now - 1));
        await reopen();
        expect(await store.operations.suspensions(now)).toEqual([s('sus_a', null), s('sus_b', now + 60_000, { provider: '', projectId })]);
        expect((await store.operations.suspensions(now + 60_000)).map((x) => x.id)).toEqual(['sus_a']);
        expect(await store.operations.resume('sus_a')).toEqual(s('sus_a', null));
        expect(await store.operations.resume('sus_a')).toBeUndefined();
        expect((await store.operations.suspensions(now)).map((x) => x.id)).toEqual(['sus_b']);
      });

      it('cancel orders: those given since a time are listed oldest first, older ones deleted', async () => {
        const day = 24 * 3600_000;
        await store.operations.orderCancel({ projectId, acceptedBefore: now - 20 * day, orderedAt: now - 20 * day });
        await store.operations.orderCancel({ projectId, acceptedBefore: now - 1, orderedAt: now });
        await store.operations.orderCancel({ projectId: 'prj_x', acceptedBefore: now - 2 * day, orderedAt: now - day });
        expect(await store.operations.cancelOrders(now - 14 * day)).toEqual([
          { projectId: 'prj_x', acceptedBefore: now - 2 * day, orderedAt: now - day },
          { projectId, acceptedBefore: now - 1, orderedAt: now },
        ]);
        expect(await store.operations.cancelOrders(0)).toHaveLength(2);
      });

      it("a project's cancel: its queued, scheduled and deferred mail accepted by the order is canceled with events and webhook messages; nothing else", async () => {
        const hook = hookRow({ statuses: ['canceled', 'sent'] });
        await store.webhooks.create(hook);
        const other = `prj_${crypto.randomUUID().slice(0, 8)}`;
        await store.projects.create({ id: other, slug: other, name: 'Other', plan: 'free', createdAt: now }, []);
        const queued = email();
        const scheduled = email({ status: 'scheduled', scheduledAt: now + 3600_000 });
        const deferred = email({ to: ['d1@inbox.test', 'd2@inbox.test'] });
        const delivered = email();
        const wire = email();
        const later = email({ createdAt: now + 10 });
        const foreign = { ...email(), projectId: other };
        for (const e of [queued, scheduled, deferred, delivered, wire, later, foreign]) expect(await store.emails.accept(e)).toEqual({ kind: 'accepted' });
        await store.deliveryLog.apply('gw-cancel', [
          gatewayEvent(1, deferred.id, 'deferred', 'd1@inbox.test'),
          gatewayEvent(2, deferred.id, 'rejected', 'd2@inbox.test'),
          gatewayEvent(3, delivered.id, 'sent', 'r@inbox.test'),
          gatewayEvent(4, wire.id, 'sending', 'r@inbox.test'),
        ]);
        expect(await store.operations.cancelProject(projectId, now, now + 100)).toBe(4);
        const got = async (id: string, p = projectId) => (await store.emails.get(p, id))!;
        for (const e of [queued, scheduled, deferred, wire]) {
          const g = await got(e.id);
          expect(g.email.status).toBe('canceled');
          expect(g.events.at(-1)).toMatchObject({ type: 'canceled', recipient: '', details: { reason: 'operator' } });
        }
        expect((await got(deferred.id)).recipients.map((r) => r.status)).toEqual(['canceled', 'rejected']);
        for (const [e, status] of [
          [delivered, 'sent'],
          [later, 'queued'],
        ] as const)
          expect((await got(e.id)).email.status).toBe(status);
        expect((await got(foreign.id, other)).email.status).toBe('queued');
        expect(await store.emails.undispatched(10, projectId)).toEqual([expect.objectContaining({ id: later.id })]);
        expect(await store.emails.due(now + 3600_000, 10)).toEqual([]);
        // Each canceled email's message, and the day's count.
        const payloads = (await store.webhooks.deliveries(hook.id)).map((d) => JSON.parse(d.payload) as { type: string; data: { email_id: string } });
        expect(
          payloads
            .filter((p) => p.type === 'email.canceled')
            .map((p) => p.data.email_id)
            .sort(),
        ).toEqual([queued, scheduled, deferred, wire].map((e) => e.id).sort());
        expect((await store.analytics.daily(projectId, '0000-00-00', '9999-99-99')).find((r) => r.status === 'canceled')?.count).toBe(4);
        // The copy on the wire when the order came is delivered after all: the receiver's answer is the truth.
        await store.deliveryLog.apply('gw-cancel', [gatewayEvent(5, wire.id, 'sent', 'r@inbox.test')]);
        expect((await got(wire.id)).email.status).toBe('sent');
        expect((await got(wire.id)).recipients.map((r) => r.status)).toEqual(['sent']);
        // Again: nothing left to cancel.
        expect(await store.operations.cancelProject(projectId, now, now + 200)).toBe(0);
      });

      it("a project's cancel of more mail than one chunk (and one slice of reading) cancels all of it", async () => {
        const list = Array.from({ length: 5003 }, () => email());
        await Promise.all(store.emails.acceptMany(list));
        expect(await store.operations.cancelProject(projectId, now, now + 1)).toBe(5003);
        expect(await store.emails.undispatched(10, projectId)).toEqual([]);
        expect((await store.emails.list(projectId, { limit: 100, status: 'canceled' })).emails).toHaveLength(100);
      });
    });

    describe('audit', () => {
      let n = 0;
      const entry = (o: Partial<AuditEntry> = {}): AuditEntry => ({
        id: `evt_${++n}_${crypto.randomUUID().slice(0, 8)}`,
        projectId,
        env: 'live',
        type: 'session.created',
        userId: 'u1',
        sessionId: 's1',
        email: 'u***@inbox.test',
        phone: null,
        provider: 'email',
        ip: '203.0.113.9',
        userAgent: 'agent',
        reason: null,
        suppressed: 0,
        at: now,
        ...o,
      });

      it('an entry is queued, in its write, for the enabled endpoints that list its type only', async () => {
        const all = hookRow();
        const listing = hookRow({ statuses: ['sign_in.failed', 'queued'] });
        const other = hookRow({ statuses: ['user.created'] });
        const off = hookRow({ statuses: ['sign_in.failed'] });
        for (const h of [all, listing, other, off]) await store.webhooks.create(h);
        await store.webhooks.update(projectId, off.id, { enabled: false });
        const e = entry({ type: 'sign_in.failed', reason: 'invalid_code', suppressed: 3, userId: null, sessionId: null });
        await store.audit.record(e, { id: e.id, reason: 'invalid_code' });
        const due = await store.webhooks.due(now + 1, 10);
        expect(due.map((d) => d.webhookId)).toEqual([listing.id]);
        expect(JSON.parse(due[0]!.payload)).toEqual({
          type: 'sign_in.failed',
          timestamp: new Date(now).toISOString(),
          created_at: new Date(now).toISOString(),
          data: { id: e.id, reason: 'invalid_code' },
        });
        expect(due[0]!.id).toMatch(/^msg_/);
        // Mail events still reach the endpoint with no filter, and the one that lists them.
        await store.emails.accept(email());
        expect((await store.webhooks.due(now + 1, 10)).map((d) => d.webhookId).sort()).toEqual([all.id, listing.id, listing.id].sort());
        expect((await store.audit.list(projectId, { limit: 10 }))?.entries).toEqual([e]);
      });

      it('pages newest first: after goes to older entries, before to newer; type filters; a foreign cursor is refused', async () => {
        const list: AuditEntry[] = [];
        for (let i = 0; i < 7; i++) {
          const e = entry({ type: i % 2 ? 'sign_in.failed' : 'session.created', at: now + i });
          list.push(e);
          await store.audit.record(e, {});
        }
        await reopen();
        const ids = (r: { entries: AuditEntry[] } | undefined) => r?.entries.map((e) => e.id);
        const newest = [...list].reverse();
        const first = await store.audit.list(projectId, { limit: 3 });
        expect(first?.hasMore).toBe(true);
        expect(ids(first)).toEqual(newest.slice(0, 3).map((e) => e.id));
        const second = await store.audit.list(projectId, { limit: 3, after: newest[2]!.id });
        expect([ids(second), second?.hasMore]).toEqual([newest.slice(3, 6).map((e) => e.id), true]);
        const last = await store.audit.list(projectId, { limit: 3, after: newest[5]!.id });
        expect([ids(last), last?.hasMore]).toEqual([[newest[6]!.id], false]);
        const back = await store.audit.list(projectId, { limit: 2, before: newest[3]!.id });
        expect([ids(back), back?.hasMore]).toEqual([[newest[1]!.id, newest[2]!.id], true]);
        const failed = await store.audit.list(projectId, { limit: 10, type: 'sign_in.failed' });
        expect(ids(failed)).toEqual(newest.filter((e) => e.type === 'sign_in.failed').map((e) => e.id));
        expect(failed?.entries[0]).toEqual(newest.find((e) => e.type === 'sign_in.failed'));
        expect(await store.audit.list(projectId, { limit: 3, after: 'evt_missing' })).toBeUndefined();
        expect(await store.audit.list('prj_other', { limit: 3, after: newest[0]!.id })).toBeUndefined();
        expect(await store.audit.list('prj_other', { limit: 3 })).toEqual({ entries: [], hasMore: false });
      });

      it('prune deletes what is older than the retention, and only that', async () => {
        const old = entry({ at: now - 10 * 86_400_000 });
        const edge = entry({ at: now - 5 * 86_400_000 });
        const fresh = entry();
        for (const e of [old, edge, fresh]) await store.audit.record(e, {});
        expect(await store.audit.prune(now - 5 * 86_400_000)).toBe(1);
        expect((await store.audit.list(projectId, { limit: 10 }))?.entries.map((e) => e.id)).toEqual([fresh.id, edge.id]);
        expect(await store.audit.prune(now - 5 * 86_400_000)).toBe(0);
      });
    });

    describe('signIn', () => {
      const profile = {
        provider: 'github',
        subject: '42',
        email: 'u@inbox.test',
        emailVerified: true,
        name: 'U',
        avatarUrl: null,
        phone: null,
        username: null,
      };
      const origin = { ip: '203.0.113.1', userAgent: 'test' };
      const session = (token: string) => ({ id: crypto.randomUUID(), tokenHash: sha(token), createdAt: now, expiresAt: now + 3_600_000 });

      it('auth settings: a new project has none set (null: the defaults apply); what is put is read back, null included', async () => {
        expect(await store.signIn.settings(projectId)).toEqual({
          sessionTtlSeconds: null,
          codeFrom: null,
          telegramWindowSeconds: null,
          requireCodeVerifier: null,
          twoFactor: null,
          jwtAudience: null,
          jwtTtlSeconds: null,
        });
        for (const requireCodeVerifier of [false, true, null]) {
          const put = {
            sessionTtlSeconds: 3600,
            codeFrom: 'a@acme.test',
            telegramWindowSeconds: null,
            requireCodeVerifier,
            twoFactor: requireCodeVerifier ? ('required' as const) : null,
            jwtAudience: requireCodeVerifier === false ? 'https://api.acme.test' : null,
            jwtTtlSeconds: requireCodeVerifier === null ? 120 : null,
          };
          await store.signIn.putSettings(projectId, put, now);
          expect(await store.signIn.settings(projectId)).toEqual(put);
        }
      });

      it('an exchange code opens one session; its reuse revokes that session', async () => {
        const opened = await store.signIn.signIn(projectId, 'live', profile, origin, now, {
          exchange: { codeHash: sha('code'), expiresAt: now + 60_000, clientChallenge: null },
        });
        expect(opened.created).toBe(true);
        const first = await store.signIn.useExchangeCode(sha('code'), projectId, 'live', session('t1'), () => true);
        if (first.status !== 'ok') throw new Error(`exchange: ${first.status}`);
        expect(first).toMatchObject({
          status: 'ok',
          secondFactor: false,
          session: { projectId, env: 'live', ip: '203.0.113.1' },
          user: { email: 'u@inbox.test' },
        });
        expect(await store.signIn.sessionByHash(sha('t1'))).toBeDefined();
        // Another project or environment does not see the code.
        expect(await store.signIn.useExchangeCode(sha('code'), projectId, 'test', session('t0'), () => true)).toEqual({ status: 'missing' });
        const again = await store.signIn.useExchangeCode(sha('code'), projectId, 'live', session('t2'), () => true);
        expect(again).toEqual({ status: 'reused', revokedTokenHash: sha('t1'), revokedSessionId: first.session.id, userId: opened.user.id });
        expect(await store.signIn.sessionByHash(sha('t1'))).toBeUndefined();
        expect(await store.signIn.sessionByHash(sha('t2'))).toBeUndefined();
        // A third use finds the session already gone: nothing more was revoked.
        const third = await store.signIn.useExchangeCode(sha('code'), projectId, 'live', session('t3'), () => true);
        expect(third).toEqual({ status: 'reused', revokedTokenHash: null, revokedSessionId: null, userId: opened.user.id });
      });

      it('signIn says whether it created the user: once per identity, also when a verified email links another provider', async () => {
        const first = await store.signIn.signIn(projectId, 'live', profile, origin, now, { session: session('c1') });
        expect(first).toMatchObject({ created: true, session: { userId: first.user.id } });
        const again = await store.signIn.signIn(projectId, 'live', profile, origin, now + 1, { session: session('c2') });
        expect(again).toMatchObject({ created: false, user: { id: first.user.id } });
        const linked = await store.signIn.signIn(projectId, 'live', { ...profile, provider: 'email', subject: 'u@inbox.test' }, origin, now + 2, {
          session: session('c3'),
        });
        expect(linked).toMatchObject({ created: false, user: { id: first.user.id } });
        // The same identity in the test environment is another user.
        expect((await store.signIn.signIn(projectId, 'test', profile, origin, now + 3, { session: session('c4') })).created).toBe(true);
      });

      const putCode = (code: string) =>
        store.signIn.putOtp({
          projectId,
          env: 'live',
          channel: 'email',
          target: 'u@inbox.test',
          codeHash: sha(code),
          createdAt: now,
          expiresAt: now + 600_000,
          testCode: null,
        });
      const check = (code: string) => store.signIn.checkOtp(projectId, 'live', 'email', 'u@inbox.test', now + 1, 5, (stored) => stored === sha(code));

      it('a code locks after 5 wrong tries, even for the right code', async () => {
        await putCode('123456');
        const results = [];
        for (let i = 0; i < 5; i++) results.push(await check('000000'));
        expect(results).toEqual(['wrong', 'wrong', 'wrong', 'wrong', 'locked']);
        expect(await check('123456')).toBe('locked');
        // A new code starts over.
        await putCode('654321');
        expect(await check('654321')).toBe('ok');
        expect(await check('654321')).toBe('missing');
      });

      it('of two concurrent racers with the right code exactly one succeeds', async () => {
        await putCode('123456');
        const results = await Promise.all([check('123456'), check('123456')]);
        expect(results.sort()).toEqual(['missing', 'ok']);
      });

      it('an OAuth state is usable once, whoever comes first', async () => {
        const state = {
          stateHash: sha('state'),
          projectId,
          env: 'live' as const,
          provider: 'github',
          callbackUrl: 'https://app.test/cb',
          codeVerifier: 'sealed',
          nonce: null,
          clientChallenge: null,
          createdAt: now,
          expiresAt: now + 600_000,
        };
        expect(await store.signIn.insertState(state, 10)).toBe(true);
        const taken = await Promise.all([store.signIn.takeState(sha('state')), store.signIn.takeState(sha('state'))]);
        expect(taken.filter(Boolean)).toEqual([
          {
            projectId,
            env: 'live',
            provider: 'github',
            callbackUrl: 'https://app.test/cb',
            codeVerifier: 'sealed',
            nonce: null,
            clientChallenge: null,
            expiresAt: now + 600_000,
          },
        ]);
        expect(await store.signIn.takeState(sha('state'))).toBeUndefined();
      });

      it("refuses a new OAuth state past the cap of the project's live ones; expired, taken and other projects' states do not count", async () => {
        const state = (name: string, o: { project?: string; env?: 'live' | 'test'; at?: number } = {}) => ({
          stateHash: sha(name),
          projectId: o.project ?? projectId,
          env: o.env ?? ('live' as const),
          provider: 'github',
          callbackUrl: 'https://app.test/cb',
          codeVerifier: 'sealed',
          nonce: null,
          clientChallenge: null,
          createdAt: o.at ?? now,
          expiresAt: (o.at ?? now) + 600_000,
        });
        expect(await store.signIn.insertState(state('old', { at: now - 700_000 }), 2)).toBe(true); // expired by now
        expect(await store.signIn.insertState(state('s1'), 2)).toBe(true);
        expect(await store.signIn.insertState(state('s2', { env: 'test' }), 2)).toBe(true); // both environments count
        expect(await store.signIn.insertState(state('s3'), 2)).toBe(false);
        expect(await store.signIn.takeState(sha('s3'))).toBeUndefined(); // the refused one was not stored
        expect(await store.signIn.insertState(state('other', { project: 'prj_other' }), 2)).toBe(true);
        await store.signIn.takeState(sha('s1'));
        expect(await store.signIn.insertState(state('s4'), 2)).toBe(true);
        // Later, once the live ones have expired, there is room again.
        expect(await store.signIn.insertState(state('s5', { at: now + 600_001 }), 2)).toBe(true);
      });

      it('concurrent new OAuth states never pass the cap together', async () => {
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            store.signIn.insertState(
              {
                stateHash: sha(`race${i}`),
                projectId,
                env: 'live',
                provider: 'github',
                callbackUrl: 'https://app.test/cb',
                codeVerifier: 'sealed',
                nonce: null,
                clientChallenge: null,
                createdAt: now,
                expiresAt: now + 600_000,
              },
              5,
            ),
          ),
        );
        expect(results.filter(Boolean)).toHaveLength(5);
      });
    });

    describeConsoleReads(() => ({ store, projectId, now }));

    describe('idempotency keys', () => {
      const WINDOW = 86_400_000;
      const LEASE = 60_000;
      const claim = (key: string, hash: string, at = now, o: { project?: string; ids?: string[] } = {}) =>
        store.idempotency.claim({
          projectId: o.project ?? projectId,
          key,
          requestHash: hash,
          emailIds: o.ids ?? [uuidv7(at)],
          now: at,
          expiresAt: at + WINDOW,
          leaseUntil: at + LEASE,
        });

      it('claim, then the same request replays the answer; another request is a mismatch; keys are per project', async () => {
        const first = await claim('k1', 'h1', now, { ids: ['e1', 'e2'] });
        expect(first).toEqual({ kind: 'new', emailIds: ['e1', 'e2'] });
        await store.idempotency.complete(projectId, 'k1', 202, '{"id":"e1","status":"queued"}');
        // The first answer recorded stays.
        await store.idempotency.complete(projectId, 'k1', 400, '{"error":"late"}');
        await reopen();
        expect(await claim('k1', 'h1', now + 1000)).toEqual({ kind: 'replay', status: 202, body: '{"id":"e1","status":"queued"}' });
        expect(await claim('k1', 'h2', now + 1000)).toEqual({ kind: 'mismatch' });
        expect((await claim('k1', 'h2', now + 1000, { project: `${projectId}-other`, ids: ['o1'] })).kind).toBe('new');
        // A refusal is replayed like an acceptance.
        await claim('k2', 'h1');
        await store.idempotency.complete(projectId, 'k2', 422, '{"code":"RECIPIENT_IN_SUPPRESSION_LIST"}');
        expect(await claim('k2', 'h1', now + 1)).toEqual({ kind: 'replay', status: 422, body: '{"code":"RECIPIENT_IN_SUPPRESSION_LIST"}' });
      });

      it('a key under way is in progress until its lease ends or it is abandoned; then the next claim takes it over with its ids', async () => {
        expect(await claim('k', 'h', now, { ids: ['first'] })).toEqual({ kind: 'new', emailIds: ['first'] });
        expect(await claim('k', 'h', now + 10)).toEqual({ kind: 'in-progress' });
        // Another request with the key is a mismatch, under way or not.
        expect(await claim('k', 'other', now + 10)).toEqual({ kind: 'mismatch' });
        // Past the lease (the claimant died): taken over once, with the first claim's ids and a new lease.
        const [a, b] = await Promise.all([claim('k', 'h', now + LEASE + 1), claim('k', 'h', now + LEASE + 1)]);
        expect([a, b]).toContainEqual({ kind: 'resumed', emailIds: ['first'] });
        expect([a, b]).toContainEqual({ kind: 'in-progress' });
        expect(await claim('k', 'h', now + LEASE + 2)).toEqual({ kind: 'in-progress' });
        // Abandoned by a claimant that no longer holds the lease: nothing changes.
        await store.idempotency.abandon(projectId, 'k', now + LEASE);
        expect(await claim('k', 'h', now + LEASE + 3)).toEqual({ kind: 'in-progress' });
        // Abandoned by the holder (its request failed): the next claim takes over at once.
        await store.idempotency.abandon(projectId, 'k', now + LEASE + 1 + LEASE);
        expect(await claim('k', 'h', now + LEASE + 4)).toEqual({ kind: 'resumed', emailIds: ['first'] });
        await store.idempotency.complete(projectId, 'k', 202, '{}');
        // An answered key is never abandoned.
        await store.idempotency.abandon(projectId, 'k', now + LEASE + 4 + LEASE);
        expect(await claim('k', 'h', now + LEASE + 5)).toEqual({ kind: 'replay', status: 202, body: '{}' });
      });

      it('after 24 h a key is free again (answered or not), for any request; prune drops what expired', async () => {
        await claim('done', 'h');
        await store.idempotency.complete(projectId, 'done', 202, '{}');
        await claim('open', 'h');
        expect(await claim('done', 'h', now + WINDOW - 1)).toEqual({ kind: 'replay', status: 202, body: '{}' });
        expect(await claim('done', 'other', now + WINDOW, { ids: ['n1'] })).toEqual({ kind: 'new', emailIds: ['n1'] });
        expect(await claim('done', 'h', now + WINDOW + 1)).toEqual({ kind: 'mismatch' });
        expect(await claim('open', 'h', now + WINDOW, { ids: ['n2'] })).toEqual({ kind: 'new', emailIds: ['n2'] });
        await claim('old', 'h');
        expect(await store.idempotency.prune(now + WINDOW - 1)).toBe(0);
        expect(await store.idempotency.prune(now + WINDOW)).toBe(1);
        expect((await claim('old', 'other', now + WINDOW + 1)).kind).toBe('new');
      });

      it('of concurrent claims of one key exactly one wins; the others see it in progress', async () => {
        const results = await Promise.all(Array.from({ length: 10 }, (_, i) => claim('race', 'h', now, { ids: [`id${i}`] })));
        expect(results.filter((r) => r.kind === 'new')).toHaveLength(1);
        expect(results.filter((r) => r.kind === 'in-progress')).toHaveLength(9);
      });
    });
  });
}

export interface NodesFixture {
  /** Opens one more node on the same data: its own connections, caches and identity, as another control process. */
  node: () => Promise<Store>;
  /** Closes every node still open and drops the data. */
  cleanup: () => Promise<void>;
}

/**
 * What must hold when several control nodes share one store (a backend made for that, such as
 * PostgreSQL): claims, counters and one-time secrets are decided by the database, not by any
 * node's memory. Each case runs its calls on two or three nodes at once.
 */
export function describeSeveralNodes(name: string, open: () => Promise<NodesFixture>): void {
  describe(`store conformance, several nodes: ${name}`, () => {
    let fx: NodesFixture;
    let a: Store;
    let b: Store;
    let projectId: string;
    const now = Date.now();

    beforeEach(async () => {
      fx = await open();
      [a, b] = await Promise.all([fx.node(), fx.node()]);
      projectId = `prj_${crypto.randomUUID().slice(0, 8)}`;
      await a.projects.create({ id: projectId, slug: projectId, name: 'Nodes', plan: 'free', createdAt: now }, []);
    });

    afterEach(async () => {
      await fx.cleanup();
    });

    const email = (o: Partial<NewEmail> = {}): NewEmail => ({
      id: uuidv7(now),
      projectId,
      status: 'queued',
      from: 'a@acme.test',
      subject: 'Hello',
      bulk: false,
      createdAt: now,
      request: JSON.stringify({ from: 'a@acme.test', to: ['r@inbox.test'], cc: [], bcc: [], reply_to: [], subject: 'Hello', text: 't', tags: [], headers: {} }),
      recipients: [{ address: 'r@inbox.test', kind: 'to' }],
      ...o,
    });

    it('a due scheduled email released by two nodes at once leaves once and is counted once', async () => {
      const later = now + 1000;
      const list = Array.from({ length: 10 }, () => email({ status: 'scheduled', scheduledAt: later }));
      await Promise.all(a.emails.acceptMany(list));
      const guards = { quota: { daily: 100, monthly: 1000 } };
      const outcomes = await Promise.all(list.flatMap((e) => [a.emails.release(e.id, guards, later), b.emails.release(e.id, guards, later)]));
      expect(outcomes.filter((o) => o.kind === 'accepted')).toHaveLength(10);
      expect(outcomes.filter((o) => o.kind === 'gone')).toHaveLength(10);
      expect(await a.analytics.usage(projectId, later)).toEqual({ day: 10, month: 10 });
    });

    it('undispatched: two nodes asking at once get disjoint claims; a third gets nothing until one closes', async () => {
      const list = Array.from({ length: 40 }, () => email());
      await Promise.all(a.emails.acceptMany(list));
      const [fromA, fromB] = await Promise.all([a.emails.undispatched(25), b.emails.undispatched(25)]);
      const idsA = fromA.map((e) => e.id);
      const idsB = fromB.map((e) => e.id);
      expect(idsA.filter((id) => idsB.includes(id))).toEqual([]);
      expect(new Set([...idsA, ...idsB])).toEqual(new Set(list.map((e) => e.id)));
      const c = await fx.node();
      expect(await c.emails.undispatched(100)).toEqual([]);
      // A node asking again gets its own claims back (its retry after a failed hand-over).
      expect(new Set((await a.emails.undispatched(100)).map((e) => e.id))).toEqual(new Set(idsA));
      // Closing gives them up: another node takes them over at once.
      await a.close();
      expect(new Set((await c.emails.undispatched(100)).map((e) => e.id))).toEqual(new Set(idsA));
      await c.emails.markDispatched(idsA, now);
      await b.emails.markDispatched(idsB, now);
      expect(await c.emails.undispatched(100)).toEqual([]);
    });

    it('a daily quota hit from two nodes at once is never passed', async () => {
      const quota = { quota: { daily: 10, monthly: 1000 } };
      const outcomes = await Promise.all([
        ...a.emails.acceptMany(
          Array.from({ length: 8 }, () => email()),
          quota,
        ),
        ...b.emails.acceptMany(
          Array.from({ length: 8 }, () => email()),
          quota,
        ),
        ...Array.from({ length: 4 }, (_, i) => (i % 2 ? a : b).emails.accept(email(), quota)),
      ]);
      expect(outcomes.filter((o) => o.kind === 'accepted')).toHaveLength(10);
      expect(outcomes.filter((o) => o.kind === 'quota')).toHaveLength(10);
      expect(await b.analytics.usage(projectId, now)).toEqual({ day: 10, month: 10 });
      expect(await a.emails.accept(email(), quota)).toEqual({ kind: 'quota', period: 'daily', limit: 10 });
    });

    it('the bulk same-subject limit holds across nodes', async () => {
      const guards = { bulk: { subjectLimit: 10, spike: { factor: 3, floor: 1000, days: 7 } } };
      const bulk = () => email({ bulk: true, subject: 'Sale' });
      const outcomes = await Promise.all([
        ...a.emails.acceptMany(Array.from({ length: 8 }, bulk), guards),
        ...b.emails.acceptMany(Array.from({ length: 8 }, bulk), guards),
      ]);
      expect(outcomes.filter((o) => o.kind === 'accepted')).toHaveLength(10);
      expect(outcomes.filter((o) => o.kind === 'bulk-subject')).toHaveLength(6);
    });

    it('delivery events applied by two nodes at once are recorded and counted once', async () => {
      const e = email();
      await a.emails.accept(e);
      const events = (): GatewayEvent[] => [
        { seq: 1, emailId: e.id, type: 'deferred', recipient: 'r@inbox.test', at: now + 1, attempt: 1, details: {} },
        { seq: 2, emailId: e.id, type: 'sent', recipient: 'r@inbox.test', at: now + 2, attempt: 2, details: {} },
      ];
      const [ra, rb] = await Promise.all([a.deliveryLog.apply('gw', events()), b.deliveryLog.apply('gw', events())]);
      expect(ra.length + rb.length).toBe(2);
      expect((await b.emails.get(projectId, e.id))?.events.map((x) => x.type)).toEqual(['queued', 'deferred', 'sent']);
      const counts = Object.fromEntries((await a.analytics.daily(projectId, '0000-00-00', '9999-99-99')).map((r) => [r.status, r.count]));
      expect(counts).toEqual({ queued: 1, sending: 1, sent: 1 });
      expect(await a.deliveryLog.cursor('gw')).toBe(2);
    });

    it('two nodes applying different events of one email at once: the one that waited sees what the other wrote', async () => {
      // Each node's run names another recipient; whichever locks the email second must read the
      // first's recipient statuses as committed, or it leaves the email `sending` with both sent.
      for (let i = 0; i < 5; i++) {
        const e = email({
          recipients: [
            { address: 'x@inbox.test', kind: 'to' },
            { address: 'y@inbox.test', kind: 'to' },
          ],
        });
        await a.emails.accept(e);
        const sent = (seq: number, recipient: string): GatewayEvent => ({
          seq,
          emailId: e.id,
          type: 'sent',
          recipient,
          at: now + seq,
          attempt: 1,
          details: {},
        });
        await Promise.all([a.deliveryLog.apply(`gw-x${i}`, [sent(1, 'x@inbox.test')]), b.deliveryLog.apply(`gw-y${i}`, [sent(1, 'y@inbox.test')])]);
        const stored = await a.emails.get(projectId, e.id);
        expect(stored?.recipients.map((r) => r.status)).toEqual(['sent', 'sent']);
        expect(stored?.email.status).toBe('sent');
      }
      const counts = Object.fromEntries((await a.analytics.daily(projectId, '0000-00-00', '9999-99-99')).map((r) => [r.status, r.count]));
      expect(counts).toEqual({ queued: 5, sending: 5, sent: 5 });
    });

    it('an idempotency key claimed from two nodes at once is won by one; the answer replays on both', async () => {
      const claim = (s: Store, id: string) =>
        s.idempotency.claim({ projectId, key: 'k', requestHash: 'h', emailIds: [id], now, expiresAt: now + 86_400_000, leaseUntil: now + 60_000 });
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => claim(i % 2 ? a : b, `id${i}`)));
      expect(results.filter((r) => r.kind === 'new')).toHaveLength(1);
      expect(results.filter((r) => r.kind === 'in-progress')).toHaveLength(7);
      await a.idempotency.complete(projectId, 'k', 202, '{"id":"x"}');
      expect(await b.idempotency.claim({ projectId, key: 'k', requestHash: 'h', emailIds: ['z'], now, expiresAt: now + 1, leaseUntil: now + 1 })).toEqual({
        kind: 'replay',
        status: 202,
        body: '{"id":"x"}',
      });
    });

    describe('one-time secrets', () => {
      const profile = {
        provider: 'github',
        subject: '7',
        email: 'u@inbox.test',
        emailVerified: true,
        name: null,
        avatarUrl: null,
        phone: null,
        username: null,
      };
      const session = (token: string) => ({ id: crypto.randomUUID(), tokenHash: sha(token), createdAt: now, expiresAt: now + 3_600_000 });
      const putCode = (code: string) =>
        a.signIn.putOtp({
          projectId,
          env: 'live',
          channel: 'email',
          target: 'u@inbox.test',
          codeHash: sha(code),
          createdAt: now,
          expiresAt: now + 600_000,
          testCode: null,
        });
      const check = (s: Store, code: string) => s.signIn.checkOtp(projectId, 'live', 'email', 'u@inbox.test', now + 1, 5, (stored) => stored === sha(code));

      it('the right code raced from two nodes succeeds exactly once', async () => {
        await putCode('123456');
        const results = await Promise.all([check(a, '123456'), check(b, '123456')]);
        expect(results.sort()).toEqual(['missing', 'ok']);
      });

      it('the 5-try cap counts the wrong tries of every node', async () => {
        await putCode('123456');
        const results = [];
        for (let i = 0; i < 5; i++) results.push(await check(i % 2 ? b : a, '000000'));
        expect(results).toEqual(['wrong', 'wrong', 'wrong', 'wrong', 'locked']);
        expect(await check(b, '123456')).toBe('locked');
        // Wrong tries at once from both nodes still stop at the cap.
        await putCode('654321');
        const burst = await Promise.all(Array.from({ length: 8 }, (_, i) => check(i % 2 ? a : b, '000000')));
        expect(burst.filter((r) => r === 'wrong')).toHaveLength(4);
        expect(await check(a, '654321')).toBe('locked');
      });

      it('an exchange code used from two nodes at once opens one session; the other use is a reuse', async () => {
        await a.signIn.signIn(projectId, 'live', profile, { ip: null, userAgent: null }, now, {
          exchange: { codeHash: sha('x-code'), expiresAt: now + 60_000, clientChallenge: null },
        });
        const results = await Promise.all([
          a.signIn.useExchangeCode(sha('x-code'), projectId, 'live', session('ta'), () => true),
          b.signIn.useExchangeCode(sha('x-code'), projectId, 'live', session('tb'), () => true),
        ]);
        expect(results.map((r) => r.status).sort()).toEqual(['ok', 'reused']);
        // The leaked code's session is revoked, whichever node opened it.
        expect(await a.signIn.sessionByHash(sha('ta'))).toBeUndefined();
        expect(await b.signIn.sessionByHash(sha('tb'))).toBeUndefined();
      });

      it('an OAuth state is taken by one node only', async () => {
        await a.signIn.insertState(
          {
            stateHash: sha('st'),
            projectId,
            env: 'live',
            provider: 'github',
            callbackUrl: 'https://app.test/cb',
            codeVerifier: 'sealed',
            nonce: null,
            clientChallenge: null,
            createdAt: now,
            expiresAt: now + 600_000,
          },
          10,
        );
        const taken = await Promise.all([a.signIn.takeState(sha('st')), b.signIn.takeState(sha('st'))]);
        expect(taken.filter(Boolean)).toHaveLength(1);
      });

      it("new OAuth states on two nodes at once never pass the project's cap together", async () => {
        const insert = (s: Store, i: number) =>
          s.signIn.insertState(
            {
              stateHash: sha(`two${i}`),
              projectId,
              env: 'live',
              provider: 'github',
              callbackUrl: 'https://app.test/cb',
              codeVerifier: 'sealed',
              nonce: null,
              clientChallenge: null,
              createdAt: now,
              expiresAt: now + 600_000,
            },
            5,
          );
        const results = await Promise.all(Array.from({ length: 16 }, (_, i) => insert(i % 2 ? a : b, i)));
        expect(results.filter(Boolean)).toHaveLength(5);
      });

      it('the same new user signing in on two nodes at once is created once', async () => {
        const p = { ...profile, subject: 'new-user', email: 'new@inbox.test' };
        const [ra, rb] = await Promise.all([
          a.signIn.signIn(projectId, 'live', p, { ip: null, userAgent: null }, now, { session: session('na') }),
          b.signIn.signIn(projectId, 'live', p, { ip: null, userAgent: null }, now, { session: session('nb') }),
        ]);
        expect(ra.user.id).toBe(rb.user.id);
      });
    });
  });
}
