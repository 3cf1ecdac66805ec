// Conformance cases of store.inbound (control/inbound), run by describeStore (conformance.ts) on every
// backend: a received email back whole, once per id (a redelivered event changes nothing and queues no
// second webhook), email.received queued only for endpoints that list it, another project's ids
// answer nothing, pages newest first both ways, and which domains receive.
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DEFAULT_DOMAIN_SETTINGS, type NewInboundEmail, type Store } from '../../../control/store/index.js';
import { uuidv7 } from '../../../core/ids.js';

export interface InboundFixture {
  store: () => Store;
  projectId: () => string;
  now: number;
}

export function describeInbound(fx: InboundFixture): void {
  describe('inbound', () => {
    const pdf = new Uint8Array([0x25, 0x50, 0x44, 0x46, 0, 255, 10, 13]);
    const email = (i: number, o: Partial<NewInboundEmail> = {}): NewInboundEmail => ({
      id: uuidv7(fx.now + i),
      projectId: fx.projectId(),
      createdAt: fx.now + i,
      mailFrom: 'ann@sender.test',
      rcptTo: ['support@acme.test'],
      from: 'Ann <ann@sender.test>',
      to: ['Support <support@acme.test>'],
      cc: ['x@acme.test'],
      bcc: [],
      replyTo: [],
      subject: `Hello ${i} ✓`,
      messageId: `<m${i}@sender.test>`,
      text: 'hi',
      html: null,
      headers: { subject: `Hello ${i}`, received: 'a\nb' },
      auth: { spf: 'pass', dkim: 'none', dmarc: 'fail', header: 'mx; spf=pass', details: '{"dmarc":{"policy":"reject"}}' },
      remoteIp: '127.0.0.1',
      helo: 'mx.sender.test',
      size: 1234,
      attachments: [
        { id: crypto.randomUUID(), filename: 'a.pdf', contentType: 'application/pdf', contentDisposition: 'attachment', contentId: null, size: pdf.length },
      ],
      raw: new TextEncoder().encode(`Subject: Hello ${i}\r\n\r\nhi`),
      contents: [pdf],
      ...o,
    });
    const row = (e: NewInboundEmail) => {
      const { raw: _raw, contents: _contents, ...rest } = e;
      return rest;
    };
    const otherProject = async () => {
      const id = `prj_other_${Math.random().toString(36).slice(2, 8)}`;
      await fx.store().projects.create({ id, slug: id, name: 'Other', plan: 'free', createdAt: fx.now }, []);
      return id;
    };

    it('stores a received email whole, with its raw message and attachment bytes, in its project only', async () => {
      const s = fx.store();
      const e = email(1);
      expect(await s.inbound.receive(e, '{"type":"email.received"}')).toBe(true);
      expect(await s.inbound.get(fx.projectId(), e.id)).toEqual(row(e));
      expect(Buffer.from((await s.inbound.raw(fx.projectId(), e.id))!).toString()).toBe('Subject: Hello 1\r\n\r\nhi');
      const a = await s.inbound.attachment(fx.projectId(), e.id, e.attachments[0]!.id);
      expect(a?.row).toEqual(e.attachments[0]);
      expect(Buffer.from(a!.content).equals(Buffer.from(pdf))).toBe(true);
      const other = await otherProject();
      expect(await s.inbound.get(other, e.id)).toBeUndefined();
      expect(await s.inbound.raw(other, e.id)).toBeUndefined();
      expect(await s.inbound.attachment(other, e.id, e.attachments[0]!.id)).toBeUndefined();
      expect(await s.inbound.attachment(fx.projectId(), e.id, 'nope')).toBeUndefined();
      expect(await s.inbound.get(fx.projectId(), 'nope')).toBeUndefined();
    });

    it('queues email.received for the endpoints that list it, once: a redelivered event changes nothing', async () => {
      const s = fx.store();
      const listing = {
        id: crypto.randomUUID(),
        projectId: fx.projectId(),
        url: 'https://hooks.test/in',
        statuses: ['email.received'],
        secret: 'sealed',
        createdAt: fx.now,
      };
      const everyEmailEvent = {
        id: crypto.randomUUID(),
        projectId: fx.projectId(),
        url: 'https://hooks.test/all',
        statuses: [],
        secret: 'sealed',
        createdAt: fx.now,
      };
      const disabled = { ...listing, id: crypto.randomUUID(), enabled: false };
      for (const h of [listing, everyEmailEvent, disabled]) await s.webhooks.create(h);
      const e = email(2);
      expect(await s.inbound.receive(e, '{"type":"email.received","n":1}')).toBe(true);
      expect(await s.inbound.receive({ ...e, subject: 'changed' }, '{"type":"email.received","n":2}')).toBe(false);
      expect((await s.inbound.get(fx.projectId(), e.id))?.subject).toBe(e.subject);
      const got = await s.webhooks.deliveries(listing.id);
      expect(got.map((d) => d.payload)).toEqual(['{"type":"email.received","n":1}']);
      expect(await s.webhooks.deliveries(everyEmailEvent.id)).toEqual([]);
      expect(await s.webhooks.deliveries(disabled.id)).toEqual([]);
      for (const h of [listing, everyEmailEvent, disabled]) await s.webhooks.remove(fx.projectId(), h.id);
    });

    it('lists newest first a page at a time, after and before; a cursor of another project names nothing', async () => {
      const s = fx.store();
      const p = await otherProject();
      const list = [1, 2, 3, 4, 5].map((i) => email(i, { projectId: p, createdAt: fx.now + (i === 4 ? 3 : i) }));
      for (const e of list) await s.inbound.receive(e, '{}');
      const ids = (page: { emails: Array<{ id: string }> } | undefined) => page?.emails.map((e) => e.id);
      // 3 and 4 share a millisecond: the id orders them.
      const order = [list[4]!, list[3]!, list[2]!, list[1]!, list[0]!].map((e) => e.id);
      const first = await s.inbound.list(p, { limit: 2 });
      expect(ids(first)).toEqual(order.slice(0, 2));
      expect(first?.hasMore).toBe(true);
      const second = await s.inbound.list(p, { limit: 2, after: order[1] });
      expect(ids(second)).toEqual(order.slice(2, 4));
      const last = await s.inbound.list(p, { limit: 2, after: order[3] });
      expect(ids(last)).toEqual(order.slice(4));
      expect(last?.hasMore).toBe(false);
      const back = await s.inbound.list(p, { limit: 2, before: order[3] });
      expect(ids(back)).toEqual(order.slice(1, 3));
      expect(back?.hasMore).toBe(true);
      const foreign = email(9);
      await s.inbound.receive(foreign, '{}');
      expect(await s.inbound.list(p, { limit: 2, after: foreign.id })).toBeUndefined();
      expect(ids(await s.inbound.list(p, { limit: 10 }))).toHaveLength(5);
    });

    it('receiving domains: receiving on and verified only; a name verified in two projects goes to the first verified', async () => {
      const s = fx.store();
      const p = await otherProject();
      const q = await otherProject();
      const domain = (projectId: string, name: string, receiving: boolean) => ({
        id: crypto.randomUUID(),
        projectId,
        name,
        status: 'pending' as const,
        selector: 's',
        dkimPrivate: 'k',
        dkimPublic: 'p',
        records: [],
        createdAt: fx.now,
        settings: { ...DEFAULT_DOMAIN_SETTINGS, receiving },
      });
      const on = domain(p, `in-${p}.test`, true);
      const off = domain(p, `out-${p}.test`, false);
      const unverified = domain(p, `new-${p}.test`, true);
      const shared = domain(p, `Shared-${p}.test`, true);
      const claim = domain(q, `shared-${p}.test`, true);
      for (const d of [on, off, unverified, shared, claim]) await s.domains.create(d);
      await s.domains.update(on.id, 'verified', [], fx.now, fx.now);
      await s.domains.update(off.id, 'verified', [], fx.now, fx.now);
      await s.domains.update(claim.id, 'verified', [], fx.now + 5, fx.now + 5);
      await s.domains.update(shared.id, 'verified', [], fx.now + 1, fx.now + 1);
      const mine = (await s.inbound.receivingDomains()).filter((d) => d.domain.endsWith(`${p}.test`));
      expect(mine.sort((x, y) => x.domain.localeCompare(y.domain))).toEqual([
        { domain: `in-${p}.test`, projectId: p },
        { domain: `shared-${p}.test`, projectId: p },
      ]);
    });
  });
}
