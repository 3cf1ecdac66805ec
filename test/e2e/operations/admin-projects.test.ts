// The console's Projects, Suppressions, Webhooks and Sign-in data calls (control/admin) on a real
// stack (real Haraka, loopback DNS and MX, a loopback webhook receiver): a project's detail after
// sending, a key created then revoked and refused by the public API, a bounced address found by a
// piece of it and removed (mail to it accepted again), a webhook message failed with the
// receiver's 500 and delivered after "retry now", sign-ins and failed codes counted per hour, and
// input shaped like an injection answered 400/404, never 500. On SQLite, then on PostgreSQL.
import crypto from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { replies, startMxSink, type MxSink } from '../../helpers/mx-sink.js';
import { Stack, type Project } from '../../helpers/stack.js';
import { client } from '../auth/setup.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/cluster.js';

let dns: DnsServer;
let sink: MxSink;
/** The stack of the backend under test (each backend's block starts its own). */
let stack: Stack;
let db: TestDatabase | undefined;
let hooks: http.Server;
let hookUrl: string;
/** What the receiver answers now. */
let answer = 500;
const posted: Array<{ id: string; type: string }> = [];

beforeAll(async () => {
  sink = await startMxSink();
  dns = await startDnsServer([
    { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
    { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
  ]);
  hooks = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      posted.push({ id: String(req.headers['webhook-id']), type: JSON.parse(body).type });
      res.statusCode = answer;
      res.end();
    });
  });
  await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(hooks.address() as { port: number }).port}/hook`;
}, 30_000);
afterAll(async () => {
  await db?.drop();
  await sink?.close();
  await dns?.close();
  await new Promise((r) => hooks?.close(r));
});

async function project(name?: string): Promise<Project> {
  const p = await stack.createProject(undefined, name);
  await stack.setPlan(p.slug, 'pro');
  await stack.verifyDomain(p.slug, 'acme.test');
  return p;
}

async function send(p: Project, to: string): Promise<{ status: number; id: string }> {
  const r = await stack.api('POST', '/v1/emails', p.keys.live, { from: 'hello@acme.test', to, subject: `to ${to}`, text: 'x' });
  return { status: r.status, id: r.body.id };
}

/** Polls `fn` until it gives something (every 100 ms), or fails after `ms`. */
async function eventually<T>(fn: () => Promise<T | undefined | 0 | false>, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v as T;
    if (Date.now() > end) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const admin = (method: string, path: string, body?: unknown) => stack.admin(method, path, body);
const raw = async (method: string, path: string, body?: unknown) => {
  const { readFileSync } = await import('node:fs');
  const token = readFileSync(`${stack.dataDir}/admin-token`, 'utf8').trim();
  return stack.adminApi(method, path, token, body);
};
const auditActions = async () => ((await admin('GET', '/admin/v1/audit?limit=100')).data as Array<{ action: string; target: string }>).map((e) => e);

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(backend, () => {
    beforeAll(async () => {
      const env: Record<string, string> = {
        POSTGATE_DNS_SERVERS: dns.address,
        POSTGATE_DELIVERY_PORT: String(sink.port),
        POSTGATE_SYSTEM_FROM: 'no-reply@postgate.test',
      };
      if (backend === 'postgres') {
        db = await createTestDatabase('pg_admin_projects');
        Object.assign(env, { POSTGATE_DATABASE_URL: db.url, POSTGATE_SECRET: crypto.randomBytes(32).toString('hex') });
      }
      stack = await Stack.start({
        env,
        config: {
          // A message's first failure is its last (its next try would fall past the maximum age): only "retry now" sends it again.
          webhooks: { allowCidrs: ['127.0.0.0/8'], retryDelays: [600], maxAgeSeconds: 60 },
        },
      });
    }, 90_000);
    afterAll(async () => {
      await stack?.stop();
    });

    describe('project detail', () => {
      it('limits of its plan, usage and 7-day rates after sending, keys without their secret, domains with their records', async () => {
        const p = await project(`O'Reilly "quoted" 100% _x_`);
        for (const to of ['one@inbox.test', 'two@inbox.test']) {
          const s = await send(p, to);
          expect(s.status).toBe(202);
          await stack.waitEmail(p.keys.live, s.id, (e) => e.status === 'sent');
        }
        const d = await admin('GET', `/admin/v1/projects/${p.slug}`);
        expect(d).toMatchObject({
          id: p.id,
          slug: p.slug,
          name: `O'Reilly "quoted" 100% _x_`,
          status: 'active',
          plan: 'pro',
          created_at: expect.any(String),
          limits: { daily_quota: 100_000, monthly_quota: 1_000_000, rate: 300 },
          usage: { day: 2, month: 2 },
          rates: { window_days: 7, sent: 2, bounced: 0, complained: 0, bounce_rate: 0, complaint_rate: 0 },
        });
        expect(d.keys).toHaveLength(2);
        for (const k of d.keys)
          expect(k).toEqual({
            id: expect.any(String),
            kind: expect.stringMatching(/^(live|test)$/),
            scope: 'all',
            prefix: expect.stringMatching(/^pg_(live|test)_.+….{4}$/),
            created_at: expect.any(String),
            revoked_at: null,
          });
        expect(JSON.stringify(d)).not.toContain(p.keys.live);
        expect(JSON.stringify(d)).not.toContain(p.keys.test);
        expect(d.domains).toEqual([
          expect.objectContaining({
            id: expect.any(String),
            name: 'acme.test',
            status: 'verified',
            checked_at: expect.any(String),
            verified_at: expect.any(String),
          }),
        ]);
        expect(d.domains[0].records.length).toBeGreaterThan(0);
        for (const r of d.domains[0].records)
          expect(r).toMatchObject({ type: expect.any(String), name: expect.any(String), value: expect.any(String), status: expect.any(String) });
        expect(JSON.stringify(d.domains)).not.toMatch(/PRIVATE KEY/);

        const missing = await raw('GET', '/admin/v1/projects/no-such-project');
        expect([missing.status, missing.body.code]).toEqual([404, 'NOT_FOUND']);
      }, 60_000);

      it('a key created, then revoked: the public API takes it, then answers 401; the detail shows it revoked', async () => {
        const p = await project();
        const k = await admin('POST', `/admin/v1/projects/${p.slug}/keys`, { kind: 'live' });
        expect(k).toEqual({ id: expect.any(String), key: expect.stringMatching(/^pg_live_/), kind: 'live', scope: 'all', hint: expect.any(String) });
        expect((await stack.api('GET', '/v1/domains', k.key)).status).toBe(200);
        const listed = (await admin('GET', `/admin/v1/projects/${p.slug}/keys`)).data;
        expect(listed.find((x: any) => x.id === k.id)).toEqual({
          id: k.id,
          kind: 'live',
          scope: 'all',
          hint: k.hint,
          created_at: expect.any(String),
          revoked_at: null,
        });
        expect(await admin('DELETE', `/admin/v1/projects/${p.slug}/keys/${k.id}`)).toEqual({ id: k.id, revoked: true });
        const refused = await stack.api('GET', '/v1/domains', k.key);
        expect(refused.status).toBe(401);
        const d = await admin('GET', `/admin/v1/projects/${p.slug}`);
        expect(d.keys.find((x: any) => x.id === k.id)).toMatchObject({ prefix: k.hint, revoked_at: expect.any(String) });
        // The other keys still work.
        expect((await stack.api('GET', '/v1/domains', p.keys.live)).status).toBe(200);
        expect((await raw('DELETE', `/admin/v1/projects/${p.slug}/keys/${k.id}`)).status).toBe(404);
      }, 30_000);
    });

    describe('suppressions', () => {
      it('a bounced address found by a piece of it (any case) across projects and in its own, removed (audited), then mailed again', async () => {
        const p = await project();
        const address = `o.brien_${p.slug}@inbox.test`;
        sink.setBehaviour(address, { rcpt: [replies.noSuchUser] });
        const first = await send(p, address);
        await stack.waitEmail(p.keys.live, first.id, (e) => e.status === 'bounced');
        expect((await send(p, address)).status).toBe(422);

        const found = await admin('GET', `/admin/v1/suppressions?q=${encodeURIComponent(`BRIEN_${p.slug.toUpperCase()}`)}`);
        expect(found).toEqual({
          data: [{ project: p.slug, address, reason: 'bounced', scope: 'all', email_id: first.id, created_at: expect.any(String) }],
          has_more: false,
          next: null,
        });
        expect((await admin('GET', `/admin/v1/suppressions?project=${p.slug}`)).data.map((s: any) => s.address)).toEqual([address]);
        // _ and % are literal: "o_brien" is not "o.brien".
        expect((await admin('GET', `/admin/v1/suppressions?q=${encodeURIComponent(`o_brien_${p.slug}`)}`)).data).toEqual([]);
        expect((await admin('GET', `/admin/v1/suppressions?q=${encodeURIComponent('%')}&project=${p.slug}`)).data).toEqual([]);

        const gone = await raw('DELETE', `/admin/v1/projects/${p.slug}/suppressions/${encodeURIComponent(address)}`);
        expect(gone.status).toBe(204);
        expect((await raw('DELETE', `/admin/v1/projects/${p.slug}/suppressions/${encodeURIComponent(address)}`)).status).toBe(404);
        expect((await admin('GET', `/admin/v1/suppressions?project=${p.slug}`)).data).toEqual([]);
        expect(await auditActions()).toContainEqual(expect.objectContaining({ action: 'suppression.remove', target: `project:${p.slug} address:${address}` }));

        const again = await send(p, address);
        expect(again.status).toBe(202);
        await stack.waitEmail(p.keys.live, again.id, (e) => e.status === 'sent');
      }, 60_000);

      it('pages newest first with a cursor over several projects', async () => {
        const [a, b] = [await project(), await project()];
        const addresses = [`p1-${a.slug}@inbox.test`, `p2-${b.slug}@inbox.test`, `p3-${a.slug}@inbox.test`];
        for (const [i, to] of addresses.entries()) {
          sink.setBehaviour(to, { rcpt: [replies.noSuchUser] });
          const s = await send(i === 1 ? b : a, to);
          await stack.waitEmail((i === 1 ? b : a).keys.live, s.id, (e) => e.status === 'bounced');
        }
        const seen: string[] = [];
        let next: string | null = null;
        do {
          const page: any = await admin('GET', `/admin/v1/suppressions?limit=1${next ? `&after=${encodeURIComponent(next)}` : ''}`);
          seen.push(...page.data.map((s: any) => s.address));
          expect(page.has_more).toBe(page.next !== null);
          next = page.next;
        } while (next);
        const ours = seen.filter((x) => addresses.includes(x));
        expect(ours).toEqual([...addresses].reverse());
      }, 60_000);
    });

    describe('webhooks', () => {
      const hookOf = async (p: Project) => {
        const r = await stack.api('POST', '/v1/webhooks', p.keys.live, { url: hookUrl, events: ['email.sent'] });
        expect(r.status, JSON.stringify(r.body)).toBe(201);
        return r.body as { id: string; secret: string };
      };
      const deliveries = async (id: string, query = '') => (await admin('GET', `/admin/v1/webhooks/${id}/deliveries${query}`)).data as any[];

      it('a message the receiver answered 500 shows failed with that code; retry now delivers it once the receiver answers 200 (audited)', async () => {
        answer = 500;
        const [a, b] = [await project(), await project()];
        const [ha, hb] = [await hookOf(a), await hookOf(b)];
        const sa = await send(a, 'hook-a@inbox.test');
        const sb = await send(b, 'hook-b@inbox.test');
        const failed = await eventually(async () => {
          const [fa, fb] = [await deliveries(ha.id, '?status=failed'), await deliveries(hb.id, '?status=failed')];
          return fa.length && fb.length ? { a: fa[0], b: fb[0] } : undefined;
        }, 20_000);
        expect(failed.a).toEqual({
          id: expect.any(String),
          event_type: 'email.sent',
          status: 'failed',
          attempt: 1,
          last_error: 'HTTP 500',
          answer_code: 500,
          created_at: expect.any(String),
          next_attempt_at: null,
          delivered_at: null,
        });
        void sa;
        void sb;

        const list = (await admin('GET', `/admin/v1/webhooks?project=${a.slug}`)).data;
        expect(list).toEqual([
          {
            id: ha.id,
            project: a.slug,
            url: hookUrl,
            events: ['email.sent'],
            enabled: true,
            created_at: expect.any(String),
            recent: { pending: 0, delivered: 0, failed: 1 },
          },
        ]);
        expect(JSON.stringify(await admin('GET', '/admin/v1/webhooks'))).not.toContain(ha.secret);
        expect((await admin('GET', '/admin/v1/webhooks')).data.map((w: any) => w.id)).toEqual(expect.arrayContaining([ha.id, hb.id]));
        // One endpoint's messages only.
        expect((await deliveries(ha.id)).map((d) => d.id)).not.toContain(failed.b.id);

        answer = 200;
        const retried = await raw('POST', `/admin/v1/webhooks/deliveries/${failed.b.id}/retry`);
        expect(retried.status).toBe(202);
        expect(retried.body).toEqual({ id: failed.b.id, status: 'pending', next_attempt_at: expect.any(String) });
        await eventually(async () => (await deliveries(hb.id, '?status=delivered')).find((d) => d.id === failed.b.id), 10_000);
        expect(posted.filter((x) => x.id === failed.b.id).length).toBe(2);
        // The other project's message was not touched.
        expect((await deliveries(ha.id, '?status=failed')).map((d) => d.id)).toEqual([failed.a.id]);
        expect(posted.filter((x) => x.id === failed.a.id).length).toBe(1);

        expect((await raw('POST', `/admin/v1/webhooks/deliveries/${failed.a.id}/retry`)).status).toBe(202);
        const delivered = await eventually(async () => (await deliveries(ha.id, '?status=delivered')).find((d) => d.id === failed.a.id), 10_000);
        expect(delivered).toMatchObject({ status: 'delivered', attempt: 2, last_error: null, answer_code: null, delivered_at: expect.any(String) });
        expect((await admin('GET', `/admin/v1/webhooks?project=${a.slug}`)).data[0].recent).toEqual({ pending: 0, delivered: 1, failed: 0 });

        const twice = await raw('POST', `/admin/v1/webhooks/deliveries/${failed.a.id}/retry`);
        expect([twice.status, twice.body.code]).toEqual([409, 'CONFLICT']);
        expect((await raw('POST', '/admin/v1/webhooks/deliveries/msg_none/retry')).status).toBe(404);
        expect((await raw('GET', '/admin/v1/webhooks/00000000-0000-0000-0000-000000000000/deliveries')).status).toBe(404);
        expect(await auditActions()).toContainEqual(
          expect.objectContaining({ action: 'webhook.retry', target: `project:${b.slug} webhook:${hb.id} message:${failed.b.id}` }),
        );
      }, 60_000);
    });

    describe('sign-in activity', () => {
      it('an email-code sign-in and a wrong code counted in the current hour (day) and day (week), by method and provider', async () => {
        const p = await stack.createProject();
        const api = client(stack, p.keys.test, { 'x-service-client-ip': '203.0.113.77' });
        expect((await api.post('/sign-in/email-otp/send', { email: 'jane@inbox.test' })).status).toBe(200);
        const code = (await api.get(`/test/code?email=${encodeURIComponent('jane@inbox.test')}`)).body.code as string;
        const wrong = code === '000000' ? '111111' : '000000';
        expect((await api.post('/sign-in/email-otp/verify', { email: 'jane@inbox.test', code: wrong })).body.code).toBe('INVALID_CODE');
        expect((await api.post('/sign-in/email-otp/verify', { email: 'jane@inbox.test', code })).status).toBe(200);

        const day = await admin('GET', `/admin/v1/projects/${p.slug}/auth/activity?period=day`);
        expect(day).toMatchObject({ period: 'day', step_s: 3600 });
        expect(day.buckets).toHaveLength(24);
        expect(day.buckets.at(-1)).toEqual({ at: expect.any(String), signed_in: 1, failed: 1 });
        expect(Date.now() - Date.parse(day.buckets.at(-1).at)).toBeLessThan(3_600_000);
        expect(day.by_method).toEqual([{ method: 'otp', signed_in: 1, failed: 1 }]);
        expect(day.by_provider).toEqual([{ provider: 'email', signed_in: 1, failed: 1 }]);

        const week = await admin('GET', `/admin/v1/projects/${p.slug}/auth/activity?period=week`);
        expect(week).toMatchObject({ period: 'week', step_s: 86_400 });
        expect(week.buckets).toHaveLength(7);
        expect(week.buckets.at(-1)).toMatchObject({ signed_in: 1, failed: 1 });
        expect(Date.parse(week.start)).toBe(Date.parse(week.buckets[0].at));
        // The same page's log: the existing audit list.
        expect((await admin('GET', `/admin/v1/projects/${p.slug}/audit`)).data.map((e: any) => e.type)).toEqual(
          expect.arrayContaining(['session.created', 'sign_in.failed', 'user.created']),
        );
      }, 30_000);
    });

    describe('bad input', () => {
      it('quotes, %, _, NUL, bad cursors and unknown names: 400 or 404 with {error, code}, never a 500', async () => {
        const p = await project();
        const cases: Array<[string, string, number]> = [
          ['GET', `/admin/v1/suppressions?q=${encodeURIComponent("' OR 1=1 --")}`, 200],
          ['GET', `/admin/v1/suppressions?q=${encodeURIComponent('%_\\')}`, 200],
          ['GET', '/admin/v1/suppressions?q=a%00b', 400],
          ['GET', `/admin/v1/suppressions?project=${encodeURIComponent("x'y")}`, 400],
          ['GET', '/admin/v1/suppressions?project=no-such-project', 404],
          ['GET', '/admin/v1/suppressions?after=not-a-cursor', 400],
          ['GET', `/admin/v1/suppressions?after=${Buffer.from('["x",1,2]').toString('base64url')}`, 400],
          ['GET', '/admin/v1/suppressions?limit=0', 400],
          ['GET', '/admin/v1/suppressions?limit=abc', 400],
          ['GET', '/admin/v1/suppressions?bogus=1', 400],
          ['GET', `/admin/v1/projects/${encodeURIComponent("a'b")}`, 400],
          ['GET', `/admin/v1/projects/${encodeURIComponent('a%b')}`, 400],
          ['GET', `/admin/v1/projects/${p.slug}/auth/activity?period=month`, 400],
          ['GET', '/admin/v1/projects/no-such-project/auth/activity', 404],
          ['GET', `/admin/v1/webhooks?project=${encodeURIComponent('"; DROP TABLE webhooks; --')}`, 400],
          ['GET', `/admin/v1/webhooks/${encodeURIComponent("'; --")}/deliveries`, 400],
          ['GET', '/admin/v1/webhooks/abc/deliveries?status=bogus', 400],
          ['GET', '/admin/v1/webhooks/abc/deliveries?limit=1000', 400],
          ['POST', `/admin/v1/webhooks/deliveries/${encodeURIComponent('%_')}/retry`, 400],
          ['POST', '/admin/v1/webhooks/deliveries/a%00/retry', 400],
          ['DELETE', `/admin/v1/projects/${p.slug}/suppressions/${encodeURIComponent('"quoted"@x')}`, 400],
          ['DELETE', `/admin/v1/projects/${p.slug}/suppressions/${encodeURIComponent("o'neil@inbox.test")}`, 404],
          ['DELETE', `/admin/v1/projects/${p.slug}/suppressions/${encodeURIComponent('a%_b@inbox.test')}`, 404],
        ];
        for (const [method, path, status] of cases) {
          const r = await raw(method, path);
          expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(status);
          if (status >= 400) expect(r.body, `${method} ${path}`).toMatchObject({ error: expect.any(String), code: expect.any(String) });
        }
        expect((await raw('GET', `/admin/v1/suppressions?q=${encodeURIComponent("' OR 1=1 --")}`)).body.data).toEqual([]);
      }, 30_000);
    });
  });
}
