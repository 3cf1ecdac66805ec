// Conformance cases of open and click tracking (Tracking.record, Tracking.counts), run by describeStore
// (conformance.ts) on every backend: counts per kind and link, the opened and clicked events (one per
// minute per link and machine-or-not), webhook messages for the endpoints that want them in Resend's
// shape, daily analytics counted once per email for a person, and hits of unknown emails dropped.
import { describe, expect, it } from 'vitest';
import type { NewEmail, Store, TrackingHit } from '../../../control/store/index.js';
import { uuidv7 } from '../../../core/ids.js';

export interface TrackingFixture {
  store: () => Store;
  projectId: () => string;
  now: number;
}

export function describeTracking(fx: TrackingFixture): void {
  describe('tracking (opens and clicks)', () => {
    const email = (): NewEmail => {
      const from = 'Acme <hello@acme.test>';
      return {
        id: uuidv7(fx.now),
        projectId: fx.projectId(),
        status: 'queued',
        from,
        subject: 'Hello',
        bulk: false,
        createdAt: fx.now,
        request: JSON.stringify({
          from,
          to: ['r@inbox.test'],
          cc: [],
          bcc: [],
          reply_to: [],
          subject: 'Hello',
          html: '<p>x</p>',
          tags: [],
          headers: {},
          bulk: false,
        }),
        recipients: [{ address: 'r@inbox.test', kind: 'to' }],
      };
    };
    // Events are one per minute bucket (floor(at / 60 s)): the hits start at a minute's start, so hits a second or
    // two apart share their minute whatever the clock said when the suite began (from fx.now they crossed a minute
    // boundary one run in sixty).
    const t0 = Math.ceil((fx.now + 60_000) / 60_000) * 60_000;
    const at = (secondsAfter: number) => t0 + secondsAfter * 1000;
    const hit = (emailId: string, o: Partial<TrackingHit> = {}): TrackingHit => ({
      emailId,
      kind: 'open',
      link: '',
      at: at(0),
      userAgent: 'Mozilla/5.0 (X11) Firefox/126.0',
      ip: '203.0.113.0/24',
      agent: 'person',
      ...o,
    });

    it('counts opens and clicks per link, records events a minute apart, and drops unknown emails', async () => {
      const store = fx.store();
      const e = email();
      await store.emails.accept(e);
      const a = 'https://shop.example/a?x=1&y=2';
      const long = `https://shop.example/${'p'.repeat(5000)}`;
      await store.tracking.record([
        hit(e.id),
        hit(e.id, { at: at(1) }),
        hit(e.id, { at: at(2), agent: 'scanner', reason: 'HEAD request', userAgent: '' }),
        hit(e.id, { kind: 'click', link: a, at: at(10) }),
        hit(e.id, { kind: 'click', link: long, at: at(20) }),
        hit(uuidv7(fx.now), { kind: 'click', link: a }),
      ]);
      await store.tracking.record([hit(e.id, { kind: 'click', link: a, at: at(140) })]);
      const counts = await store.tracking.counts(e.id);
      expect(counts).toEqual([
        { kind: 'open', link: '', count: 3, bots: 1, firstAt: at(0), lastAt: at(2) },
        { kind: 'click', link: a, count: 2, bots: 0, firstAt: at(10), lastAt: at(140) },
        { kind: 'click', link: long, count: 1, bots: 0, firstAt: at(20), lastAt: at(20) },
      ]);
      const events = (await store.emails.get(fx.projectId(), e.id))!.events.filter((x) => x.type === 'opened' || x.type === 'clicked');
      // Two person opens in one minute are one event; the machine's open is its own; each click minute and link one.
      expect(events.map((x) => [x.type, x.details?.bot, x.details?.link ?? ''])).toEqual([
        ['opened', false, ''],
        ['opened', true, ''],
        ['clicked', false, a],
        ['clicked', false, long],
        ['clicked', false, a],
      ]);
      expect(events[1]!.details).toMatchObject({ agent: 'scanner', bot_reason: 'HEAD request', ip: '203.0.113.0/24' });
      // Counted in the analytics once per email and kind, for a person only.
      const daily = await store.analytics.daily(fx.projectId(), '0000-00-00', '9999-99-99');
      expect(daily.filter((r) => (r.status as string) === 'opened' || (r.status as string) === 'clicked').map((r) => [r.status, r.count])).toEqual(
        expect.arrayContaining([
          ['opened', 1],
          ['clicked', 1],
        ]),
      );
      // The email itself is unchanged: tracking moves no status.
      expect((await store.emails.get(fx.projectId(), e.id))!.email.status).toBe('queued');
      expect(await store.tracking.counts(uuidv7(fx.now))).toEqual([]);
    });

    it('a machine alone is not counted as opened in the analytics', async () => {
      const store = fx.store();
      const projectId = `prj_${crypto.randomUUID().slice(0, 8)}`;
      await store.projects.create({ id: projectId, slug: projectId, name: 'Bots', plan: 'free', createdAt: fx.now }, []);
      const e = { ...email(), projectId };
      await store.emails.accept(e);
      await store.tracking.record([hit(e.id, { agent: 'scanner', reason: 'Apple Mail Privacy Protection' })]);
      const daily = await store.analytics.daily(projectId, '0000-00-00', '9999-99-99');
      expect(daily.map((r) => r.status)).not.toContain('opened');
      await store.tracking.record([hit(e.id, { agent: 'proxy', reason: 'Google image proxy' })]);
      const after = await store.analytics.daily(projectId, '0000-00-00', '9999-99-99');
      expect(after.find((r) => (r.status as string) === 'opened')?.count).toBe(1);
    });

    it("queues email.opened and email.clicked for endpoints that list them or none, in Resend's shape", async () => {
      const store = fx.store();
      const projectId = `prj_${crypto.randomUUID().slice(0, 8)}`;
      await store.projects.create({ id: projectId, slug: projectId, name: 'Hooks', plan: 'free', createdAt: fx.now }, []);
      const all = { id: crypto.randomUUID(), projectId, url: 'https://hooks.test/all', statuses: [] as string[], secret: 'sealed', createdAt: fx.now };
      const clicks = { ...all, id: crypto.randomUUID(), url: 'https://hooks.test/clicks', statuses: ['clicked'] };
      const delivered = { ...all, id: crypto.randomUUID(), url: 'https://hooks.test/delivered', statuses: ['delivered', 'queued'] };
      for (const w of [all, clicks, delivered]) await store.webhooks.create(w);
      const e = { ...email(), projectId };
      await store.emails.accept(e);
      await store.tracking.record([hit(e.id), hit(e.id, { kind: 'click', link: 'https://shop.example/', at: at(30) })]);
      // A later batch in the same minute (the pixel loaded again): counted, but no second event or message.
      await store.tracking.record([hit(e.id, { at: at(1) })]);
      expect((await store.tracking.counts(e.id)).find((x) => x.kind === 'open')?.count).toBe(2);
      const types = async (id: string) => (await store.webhooks.deliveries(id)).map((d) => JSON.parse(d.payload) as { type: string; data: any });
      const toAll = await types(all.id);
      expect(toAll.map((m) => m.type).sort()).toEqual(['email.clicked', 'email.opened', 'email.queued']);
      const clicked = toAll.find((m) => m.type === 'email.clicked')!;
      expect(clicked.data).toMatchObject({
        email_id: e.id,
        subject: 'Hello',
        to: ['r@inbox.test'],
        click: {
          link: 'https://shop.example/',
          timestamp: new Date(at(30)).toISOString(),
          userAgent: 'Mozilla/5.0 (X11) Firefox/126.0',
          ipAddress: '203.0.113.0/24',
          bot: false,
        },
      });
      expect(toAll.find((m) => m.type === 'email.opened')!.data.open).toMatchObject({ ipAddress: '203.0.113.0/24', bot: false });
      expect((await types(clicks.id)).map((m) => m.type)).toEqual(['email.clicked']);
      // An endpoint for delivered (and queued) mail does not get opens and clicks because of the email's status.
      expect((await types(delivered.id)).map((m) => m.type)).toEqual(['email.queued']);
    });
  });
}
