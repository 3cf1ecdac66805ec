// Conformance cases of the operator's email search (Emails.search, Emails.find), run by describeStore
// (conformance.ts) on every backend: filters, the project filter, newest-first pages with a cursor, and
// the scan bound that gives a page fewer emails and a `next` to go on.
import { describe, expect, it } from 'vitest';
import type { EmailSearch, GatewayEvent, NewEmail, Store } from '../../../control/store/index.js';
import { uuidv7 } from '../../../core/ids.js';

export interface SearchFixture {
  store: () => Store;
  projectId: () => string;
  now: number;
}

export function describeEmailSearch(fx: SearchFixture): void {
  describe('emails.search and emails.find (the operator console)', () => {
    let n = 0;
    /** An email created at now + i ms, with its own id of that time. */
    const email = (i: number, o: { projectId?: string; to?: string[]; from?: string; subject?: string; tags?: string[]; status?: NewEmail['status'] } = {}) => {
      const to = o.to ?? [`r${n++}@inbox.test`];
      const from = o.from ?? 'Acme <hello@acme.test>';
      const subject = o.subject ?? 'Hello';
      const createdAt = fx.now + i;
      const e: NewEmail = {
        id: uuidv7(createdAt),
        projectId: o.projectId ?? fx.projectId(),
        status: o.status ?? 'queued',
        from,
        subject,
        bulk: false,
        createdAt,
        request: JSON.stringify({ from, to, cc: [], bcc: [], reply_to: [], subject, text: 't', tags: o.tags ?? [], headers: {}, bulk: false }),
        recipients: to.map((address) => ({ address, kind: 'to' as const })),
      };
      return e;
    };
    const accept = async (list: NewEmail[]) => {
      for (const e of list) expect(await fx.store().emails.accept(e)).toEqual({ kind: 'accepted' });
      return list.map((e) => e.id);
    };
    const ids = async (q: Partial<EmailSearch>) => (await fx.store().emails.search({ limit: 100, ...q })).emails.map((e) => e.id);
    const other = async () => {
      const id = `prj_${crypto.randomUUID().slice(0, 8)}`;
      await fx.store().projects.create({ id, slug: id, name: 'Other', plan: 'free', createdAt: fx.now }, []);
      return id;
    };

    it('lists every project newest first, with to and tags as sent; the project filter filters; pages go on with the cursor', async () => {
      const theirs = await other();
      const mine = fx.projectId();
      const list = [
        email(0, { to: ['a@inbox.test', 'b@inbox.test'], tags: ['k:v', 'plain'] }),
        email(1, { projectId: theirs }),
        email(2),
        email(3, { projectId: theirs }),
        email(4),
      ];
      const id = await accept(list);
      const all = await fx.store().emails.search({ limit: 100 });
      expect(all.emails.map((e) => e.id)).toEqual([id[4], id[3], id[2], id[1], id[0]]);
      expect(all).toMatchObject({ hasMore: false, next: null, scannedUntil: null });
      expect(all.emails[4]).toEqual({
        id: id[0],
        projectId: mine,
        status: 'queued',
        from: 'Acme <hello@acme.test>',
        subject: 'Hello',
        createdAt: fx.now,
        to: ['a@inbox.test', 'b@inbox.test'],
        tags: ['k:v', 'plain'],
      });
      expect(await ids({ projectId: theirs })).toEqual([id[3], id[1]]);
      expect(await ids({ projectId: mine })).toEqual([id[4], id[2], id[0]]);
      expect(await ids({ projectId: 'prj_none' })).toEqual([]);
      // Two at a time: each page's next is the last email given; the last page says so.
      const p1 = await fx.store().emails.search({ limit: 2 });
      expect([p1.emails.map((e) => e.id), p1.hasMore, p1.next]).toEqual([[id[4], id[3]], true, id[3]]);
      expect(p1.scannedUntil).toBe(fx.now + 3);
      const p2 = await fx.store().emails.search({ limit: 2, after: p1.next! });
      expect(p2.emails.map((e) => e.id)).toEqual([id[2], id[1]]);
      const p3 = await fx.store().emails.search({ limit: 2, after: p2.next! });
      expect(p3).toMatchObject({ hasMore: false, next: null });
      expect(p3.emails.map((e) => e.id)).toEqual([id[0]]);
    });

    it('filters: id, recipient (any case), sender and subject as text (no wildcards), status, tag, time', async () => {
      const theirs = await other();
      const list = [
        email(0, { to: ['Ann.Lee@Inbox.test'], subject: 'Your receipt #100%', tags: ['team:blue'] }),
        email(1, { to: ['bob@inbox.test', 'ann.lee@inbox.test'], subject: 'Reset your password', from: 'Billing <billing@shop.test>' }),
        email(2, { subject: 'your_receipt #101', tags: ['team:red', 'team'] }),
        email(3, { projectId: theirs, to: ['ann.lee@inbox.test'], subject: 'Receipt', status: 'failed' }),
        email(4, { subject: 'news', tags: ['teams:x'] }),
      ];
      const id = await accept(list);
      expect(await ids({ id: id[2] })).toEqual([id[2]]);
      expect(await ids({ id: id[3], projectId: fx.projectId() })).toEqual([]);
      expect(await ids({ id: id[0], to: 'ann.lee@inbox.test' })).toEqual([id[0]]);
      expect(await ids({ id: id[2], to: 'ann.lee@inbox.test' })).toEqual([]);
      expect(await ids({ id: uuidv7(fx.now) })).toEqual([]);
      expect(await ids({ to: 'ANN.LEE@inbox.TEST' })).toEqual([id[3], id[1], id[0]]);
      expect(await ids({ to: 'ann.lee@inbox.test', projectId: theirs })).toEqual([id[3]]);
      expect(await ids({ to: 'ann.lee@inbox.test', status: 'failed' })).toEqual([id[3]]);
      expect(await ids({ to: 'ann.lee' })).toEqual([]);
      expect(await ids({ from: 'SHOP.test' })).toEqual([id[1]]);
      expect(await ids({ from: 'acme' })).toEqual([id[4], id[3], id[2], id[0]]);
      expect(await ids({ subject: 'RECEIPT' })).toEqual([id[3], id[2], id[0]]);
      // % and _ are letters here, not patterns.
      expect(await ids({ subject: '100%' })).toEqual([id[0]]);
      expect(await ids({ subject: '%' })).toEqual([id[0]]);
      expect(await ids({ subject: '_' })).toEqual([id[2]]);
      expect(await ids({ subject: "' OR 1=1 --" })).toEqual([]);
      expect(await ids({ status: 'failed' })).toEqual([id[3]]);
      expect(await ids({ status: 'sent' })).toEqual([]);
      expect(await ids({ tag: 'team:red' })).toEqual([id[2]]);
      expect(await ids({ tag: 'team' })).toEqual([id[2], id[0]]);
      expect(await ids({ tag: 'team:' })).toEqual([]);
      expect(await ids({ tag: 'teams' })).toEqual([id[4]]);
      expect(await ids({ tag: 'blue' })).toEqual([]);
      expect(await ids({ since: fx.now + 1, until: fx.now + 3 })).toEqual([id[3], id[2], id[1]]);
      expect(await ids({ since: fx.now + 4 })).toEqual([id[4]]);
      expect(await ids({ until: fx.now - 1 })).toEqual([]);
      expect(await ids({ subject: 'receipt', since: fx.now + 1, projectId: fx.projectId() })).toEqual([id[2]]);
      expect(await ids({ to: 'ann.lee@inbox.test', until: fx.now + 1 })).toEqual([id[1], id[0]]);
    });

    it('stops after the scan bound: a page may be short or empty, with next and scanned_until to go on', async () => {
      const list = Array.from({ length: 12 }, (_, i) => email(i, { subject: i === 1 || i === 2 ? 'needle' : 'hay', to: ['same@inbox.test'] }));
      const id = await accept(list);
      const seen: string[] = [];
      const reached: Array<number | null> = [];
      let after: string | undefined;
      for (let calls = 0; calls < 10; calls++) {
        const page = await fx.store().emails.search({ limit: 10, subject: 'needle', scan: 5, ...(after ? { after } : {}) });
        seen.push(...page.emails.map((e) => e.id));
        reached.push(page.scannedUntil);
        if (!page.next) break;
        expect(page.hasMore).toBe(true);
        after = page.next;
      }
      expect(seen).toEqual([id[2], id[1]]);
      // 12 emails, 5 a call: ids 11..7, 6..2, then 1..0 to the end.
      expect(reached).toEqual([fx.now + 7, fx.now + 2, null]);
      // The recipient walk is bounded the same way.
      const byTo = await fx.store().emails.search({ limit: 10, to: 'same@inbox.test', subject: 'needle', scan: 5 });
      expect(byTo).toMatchObject({ emails: [], hasMore: true, next: id[7], scannedUntil: fx.now + 7 });
      const next = await fx.store().emails.search({ limit: 10, to: 'same@inbox.test', subject: 'needle', scan: 5, after: byTo.next! });
      expect(next.emails.map((e) => e.id)).toEqual([id[2]]);
    });

    it('find: an email of any project with its recipients and events, details as recorded', async () => {
      const theirs = await other();
      const e = email(0, { projectId: theirs, to: ['x@inbox.test', 'y@inbox.test'] });
      await accept([e]);
      const ev: GatewayEvent = {
        seq: 1,
        emailId: e.id,
        type: 'delivered',
        recipient: 'x@inbox.test',
        at: fx.now + 10,
        attempt: 1,
        details: { mx: 'mx.inbox.test', response: '250 2.0.0 Ok: queued', enhanced_code: '2.0.0', provider: 'other' },
      };
      await fx.store().deliveryLog.apply('gw-search', [ev]);
      const found = await fx.store().emails.find(e.id);
      expect(found?.email).toMatchObject({ id: e.id, projectId: theirs, subject: 'Hello' });
      expect(found?.recipients.map((r) => [r.address, r.kind])).toEqual([
        ['x@inbox.test', 'to'],
        ['y@inbox.test', 'to'],
      ]);
      expect(found?.events.map((x) => x.type)).toEqual(['queued', 'delivered']);
      expect(found?.events[1]).toMatchObject({ recipient: 'x@inbox.test', attempt: 1, details: ev.details });
      expect(await fx.store().emails.find(uuidv7(fx.now))).toBeUndefined();
    });
  });
}
