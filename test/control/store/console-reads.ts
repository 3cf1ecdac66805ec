// The conformance cases of the operator console's reads and its one write (control/admin): the
// suppression search, the webhook messages by status with retry-now, and the sign-in activity.
// describeStore (conformance.ts) runs them on every backend with its fresh store.
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AuditEntry, NewEmail, Store } from '../../../control/store/index.js';
import { uuidv7 } from '../../../core/ids.js';

export interface ConsoleCase {
  store: Store;
  projectId: string;
  now: number;
}

export function describeConsoleReads(ctx: () => ConsoleCase): void {
  describe('console reads', () => {
    const newProject = async (store: Store, now: number) => {
      const id = `prj_${crypto.randomUUID().slice(0, 8)}`;
      await store.projects.create({ id, slug: id, name: 'Other', plan: 'free', createdAt: now }, []);
      return id;
    };

    /** One email to `to`, then each address unsubscribed at now + its position (a suppression each). */
    const suppress = async (store: Store, projectId: string, to: string[], at: number) => {
      const e: NewEmail = {
        id: uuidv7(at),
        projectId,
        status: 'queued',
        from: 'a@acme.test',
        subject: 's',
        bulk: true,
        createdAt: at,
        request: JSON.stringify({ from: 'a@acme.test', to, subject: 's', text: 't' }),
        recipients: to.map((address) => ({ address, kind: 'to' as const })),
      };
      expect(await store.emails.accept(e)).toEqual({ kind: 'accepted' });
      for (const [i, address] of to.entries()) await store.suppressions.unsubscribe(projectId, e.id, address, 'link', at + i);
      return e.id;
    };

    it('suppressions: newest first over every project or one, paged by cursor, q a case-insensitive substring with % and _ taken literally', async () => {
      const { store, projectId, now } = ctx();
      const other = await newProject(store, now);
      const mine = ['Alice@one.test', 'bob@one.test', 'a_b@one.test', 'axb@one.test', 'per%cent@one.test', "o'brien@one.test"];
      const emailId = await suppress(store, projectId, mine, now);
      await suppress(store, other, ['alice@two.test', 'carol@two.test'], now + 100);

      const all = await store.suppressions.search({ limit: 100 });
      expect(all.hasMore).toBe(false);
      expect(all.rows.map((r) => r.address)).toEqual(['carol@two.test', 'alice@two.test', ...[...mine].reverse()]);
      expect(all.rows.at(-1)).toEqual({ projectId, address: 'Alice@one.test', reason: 'unsubscribed', scope: 'bulk', emailId, createdAt: now });

      // Pages of 3 give every row once, in the same order.
      const paged: string[] = [];
      let after: { createdAt: number; projectId: string; address: string } | undefined;
      for (let i = 0; i < 5; i++) {
        const page = await store.suppressions.search({ limit: 3, ...(after ? { after } : {}) });
        paged.push(...page.rows.map((r) => r.address));
        if (!page.hasMore) break;
        after = page.rows.at(-1)!;
      }
      expect(paged).toEqual(all.rows.map((r) => r.address));

      const of = async (q: string, projectIdOf?: string) =>
        (await store.suppressions.search({ limit: 100, q, ...(projectIdOf ? { projectId: projectIdOf } : {}) })).rows.map((r) => r.address);
      expect(await of('ALICE')).toEqual(['alice@two.test', 'Alice@one.test']);
      expect(await of('alice', projectId)).toEqual(['Alice@one.test']);
      expect(await of('a_b')).toEqual(['a_b@one.test']);
      expect(await of('%')).toEqual(['per%cent@one.test']);
      expect(await of("o'brien@one.test")).toEqual(["o'brien@one.test"]);
      expect(await of('\\')).toEqual([]);
      expect(await of('nobody')).toEqual([]);
      expect((await store.suppressions.search({ limit: 100, projectId: other })).rows.map((r) => r.address)).toEqual(['carol@two.test', 'alice@two.test']);
    });

    let n = 0;
    const failedSignIn = (projectId: string, at: number, o: Partial<AuditEntry> = {}): AuditEntry => ({
      id: `evt_c${++n}_${crypto.randomUUID().slice(0, 8)}`,
      projectId,
      env: 'live',
      type: 'sign_in.failed',
      userId: null,
      sessionId: null,
      email: 'u***@inbox.test',
      phone: null,
      provider: 'email',
      ip: null,
      userAgent: null,
      reason: 'invalid_code',
      suppressed: 0,
      at,
      ...o,
    });

    it('webhook messages: by status among the latest, how the latest stand, one by id, retry-now of a pending or failed one only', async () => {
      const { store, projectId, now } = ctx();
      const other = await newProject(store, now);
      const hook = { id: crypto.randomUUID(), projectId, url: 'https://hooks.test/a', statuses: ['sign_in.failed'], secret: 'sealed', createdAt: now };
      const theirs = {
        id: crypto.randomUUID(),
        projectId: other,
        url: 'https://hooks.test/b',
        statuses: ['sign_in.failed'],
        secret: 'sealed',
        createdAt: now + 1,
      };
      await store.webhooks.create(hook);
      await store.webhooks.create(theirs);
      expect((await store.webhooks.all()).map((w) => w.id)).toEqual([hook.id, theirs.id]);
      for (let i = 0; i < 4; i++) await store.audit.record(failedSignIn(projectId, now + i), {});
      await store.audit.record(failedSignIn(other, now), {});
      const [d3, d2, d1, d0] = await store.webhooks.deliveries(hook.id);
      expect([d3, d2, d1, d0].map((d) => d!.createdAt)).toEqual([now + 3, now + 2, now + 1, now]);
      await store.webhooks.recordAttempt(d0!.id, 'delivered', 1, now, null, now + 5);
      await store.webhooks.recordAttempt(d1!.id, 'failed', 9, now + 86_400_000, 'HTTP 500', null);
      await store.webhooks.recordAttempt(d2!.id, 'pending', 1, now + 60_000, 'timeout', null);

      expect((await store.webhooks.deliveries(hook.id, 50, 'failed')).map((d) => d.id)).toEqual([d1!.id]);
      expect((await store.webhooks.deliveries(hook.id, 50, 'pending')).map((d) => d.id)).toEqual([d3!.id, d2!.id]);
      expect((await store.webhooks.deliveries(hook.id, 1, 'pending')).map((d) => d.id)).toEqual([d3!.id]);
      expect(await store.webhooks.recent(hook.id, 100)).toEqual({ pending: 2, delivered: 1, failed: 1 });
      expect(await store.webhooks.recent(hook.id, 2)).toEqual({ pending: 2, delivered: 0, failed: 0 });
      expect(await store.webhooks.delivery(d1!.id)).toMatchObject({ id: d1!.id, webhookId: hook.id, projectId, status: 'failed', lastError: 'HTTP 500' });
      expect(await store.webhooks.delivery('msg_none')).toBeUndefined();

      const at = now + 1000;
      expect(await store.webhooks.retryNow(d1!.id, at)).toMatchObject({ id: d1!.id, status: 'pending', nextAttemptAt: at, attempt: 9, lastError: 'HTTP 500' });
      expect(await store.webhooks.retryNow(d2!.id, at)).toMatchObject({ id: d2!.id, status: 'pending', nextAttemptAt: at });
      expect(await store.webhooks.retryNow(d0!.id, at)).toBeUndefined();
      expect(await store.webhooks.delivery(d0!.id)).toMatchObject({ status: 'delivered', deliveredAt: now + 5 });
      expect(await store.webhooks.retryNow('msg_none', at)).toBeUndefined();
      // Due now: the sender's next poll takes them (the other project's message was due from the start).
      const due = (await store.webhooks.due(at, 50)).map((d) => d.id);
      expect(due).toEqual(expect.arrayContaining([d1!.id, d2!.id]));
      expect(due).not.toContain(d0!.id);
    });

    it('sign-in activity: sign-ins and failures (with those the rate limit left out) per bucket and provider, of the period and project only', async () => {
      const { store, projectId, now } = ctx();
      const other = await newProject(store, now);
      const hour = 3_600_000;
      const from = now - (now % hour) - 23 * hour;
      const to = from + 24 * hour;
      const entries: AuditEntry[] = [
        failedSignIn(projectId, from, { type: 'session.created', provider: 'email' }),
        failedSignIn(projectId, from + 10, { type: 'session.created', provider: 'google' }),
        failedSignIn(projectId, from + hour - 1, { provider: 'email', suppressed: 4 }),
        failedSignIn(projectId, from + 5 * hour, { provider: 'sms' }),
        failedSignIn(projectId, to - 1, { type: 'session.created', provider: 'email' }),
        failedSignIn(projectId, to - 1, { type: 'session.created', provider: null }),
        // Not sign-ins or failures, or out of the period, or another project's.
        failedSignIn(projectId, from + 20, { type: 'user.created' }),
        failedSignIn(projectId, from + 30, { type: 'session.revoked', reason: 'sign_out' }),
        failedSignIn(projectId, from - 1),
        failedSignIn(projectId, to),
        failedSignIn(other, from + 40),
      ];
      for (const e of entries) await store.audit.record(e, {});
      const rows = await store.audit.activity(projectId, from, to, hour);
      const key = (r: { bucket: number; provider: string | null }) => `${r.bucket}:${r.provider}`;
      expect([...rows].sort((a, b) => key(a).localeCompare(key(b)))).toEqual(
        [
          { bucket: 0, provider: 'email', signedIn: 1, failed: 5 },
          { bucket: 0, provider: 'google', signedIn: 1, failed: 0 },
          { bucket: 23, provider: 'email', signedIn: 1, failed: 0 },
          { bucket: 23, provider: null, signedIn: 1, failed: 0 },
          { bucket: 5, provider: 'sms', signedIn: 0, failed: 1 },
        ].sort((a, b) => key(a).localeCompare(key(b))),
      );
      expect(await store.audit.activity(projectId, from, to, 24 * hour)).toHaveLength(4);
      expect(await store.audit.activity(other, to, to + hour, hour)).toEqual([]);
    });
  });
}
