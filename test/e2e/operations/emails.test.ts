// The operator's emails end to end, on a real stack (real Haraka, loopback DNS and MX): mail sent with
// the public API to several recipients, one refused by the MX, is found on the admin listener by
// recipient, subject, status, tag and project, paged with the cursor, and opened with its recipients
// and the timeline of its events carrying the MX's answers. Hostile filters are 400s or empty pages,
// never 500s, and the admin token is required. On SQLite and on PostgreSQL.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../helpers/cluster.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { replies, startMxSink, type MxSink } from '../../helpers/mx-sink.js';
import { Stack, type Project } from '../../helpers/stack.js';

let dns: DnsServer;
let sink: MxSink;

const RECORDS = [
  { type: 'MX' as const, name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
  { type: 'A' as const, name: 'mx.inbox.test', address: '127.0.0.1' },
];

const final = (e: any) => ['sent', 'delivered', 'bounced', 'rejected'].includes(e.status);

beforeAll(async () => {
  sink = await startMxSink();
  dns = await startDnsServer(RECORDS);
  sink.setBehaviour('gone@inbox.test', { rcpt: [replies.noSuchUser, replies.noSuchUser] });
});
afterAll(async () => {
  await sink?.close();
  await dns?.close();
});

describe.each(['sqlite', 'postgres'] as const)('the operator searches and opens emails (%s)', (backend) => {
  let stack: Stack;
  let token: string;
  let db: TestDatabase | undefined;

  afterAll(async () => {
    await stack?.stop();
    await db?.drop();
  });

  async function project(): Promise<Project> {
    const p = await stack.createProject();
    await stack.setPlan(p.slug, 'scale');
    await stack.verifyDomain(p.slug, 'acme.test');
    return p;
  }

  const search = (query: string) => stack.admin('GET', `/admin/v1/emails?${query}`);

  let p: Project;
  let q: Project;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    if (backend === 'postgres') db = await createTestDatabase('pg_emails');
    stack = await Stack.start({
      env: {
        POSTGATE_DNS_SERVERS: dns.address,
        POSTGATE_DELIVERY_PORT: String(sink.port),
        ...(db ? { POSTGATE_DATABASE_URL: db.url, POSTGATE_SECRET: crypto.randomBytes(32).toString('hex') } : {}),
      },
    });
    token = fs.readFileSync(`${stack.dataDir}/admin-token`, 'utf8').trim();
    p = await project();
    q = await project();
    const send = async (key: string, name: string, body: Record<string, unknown>) => {
      const r = await stack.api('POST', '/v1/emails', key, { from: 'Acme <hello@acme.test>', text: 'hello', ...body });
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      ids[name] = r.body.id;
    };
    await send(p.keys.live, 'receipt', {
      to: ['Ann@inbox.test', 'bob@inbox.test'],
      cc: 'carl@inbox.test',
      subject: 'Your receipt #4711',
      html: '<p>héllo</p>',
      tags: [{ name: 'kind', value: 'receipt' }, 'vip'],
    });
    await send(p.keys.live, 'bounce', { to: 'gone@inbox.test', subject: 'Reset your password', tags: [{ name: 'kind', value: 'reset' }] });
    for (let i = 0; i < 3; i++) await send(p.keys.live, `digest${i}`, { to: `reader${i}@inbox.test`, subject: `Weekly digest ${i}` });
    await send(q.keys.live, 'theirs', { to: 'ann@inbox.test', subject: 'Their receipt' });
    for (const [name, id] of Object.entries(ids)) await stack.waitEmail(name === 'theirs' ? q.keys.live : p.keys.live, id, final);
  }, 120_000);

  it('finds by recipient (any case), subject, status, tag and project, newest first', async () => {
    const byTo = await search('to=ANN@inbox.test');
    expect(byTo.data.map((e: any) => e.id)).toEqual([ids.theirs, ids.receipt]);
    expect(byTo).toMatchObject({ has_more: false, next: null, scanned_until: null });
    expect(byTo.data[1]).toEqual({
      id: ids.receipt,
      project: p.slug,
      from: 'Acme <hello@acme.test>',
      to: ['Ann@inbox.test', 'bob@inbox.test'],
      subject: 'Your receipt #4711',
      status: 'sent',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      tags: [
        { name: 'kind', value: 'receipt' },
        { name: 'vip', value: null },
      ],
    });
    // cc is a recipient too; the project filter filters.
    expect((await search('to=carl@inbox.test')).data.map((e: any) => e.id)).toEqual([ids.receipt]);
    expect((await search(`to=ann@inbox.test&project=${q.slug}`)).data.map((e: any) => e.id)).toEqual([ids.theirs]);
    expect((await search(`subject=RECEIPT&project=${p.slug}`)).data.map((e: any) => e.id)).toEqual([ids.receipt]);
    expect((await search('subject=receipt')).data.map((e: any) => e.project)).toEqual([q.slug, p.slug]);
    expect((await search(`status=bounced&project=${p.slug}`)).data.map((e: any) => e.id)).toEqual([ids.bounce]);
    expect((await search('tag=kind:reset')).data.map((e: any) => e.id)).toEqual([ids.bounce]);
    expect((await search(`tag=kind&project=${p.slug}`)).data.map((e: any) => e.id)).toEqual([ids.bounce, ids.receipt]);
    expect((await search(`from=acme.TEST&project=${q.slug}`)).data.map((e: any) => e.id)).toEqual([ids.theirs]);
    expect((await search(`id=${ids.digest1}`)).data.map((e: any) => e.id)).toEqual([ids.digest1]);
    expect((await search(`id=${ids.digest1}&project=${q.slug}`)).data).toEqual([]);
    const since = new Date(Date.now() - 3600_000).toISOString();
    expect((await search(`subject=digest&since=${since}`)).data).toHaveLength(3);
    expect((await search('subject=digest&until=2020-01-01')).data).toEqual([]);
  });

  it('pages with the cursor, newest first, each email once', async () => {
    const seen: string[] = [];
    let after = '';
    for (let i = 0; i < 10; i++) {
      const page = await search(`project=${p.slug}&limit=2${after ? `&after=${after}` : ''}`);
      seen.push(...page.data.map((e: any) => e.id));
      if (!page.next) break;
      expect(page.has_more).toBe(true);
      expect(page.data.length).toBeLessThanOrEqual(2);
      after = page.next;
    }
    expect(seen).toEqual([ids.digest2, ids.digest1, ids.digest0, ids.bounce, ids.receipt]);
  });

  it("opens one email: its recipients and its events with the MX's answers", async () => {
    const e = await stack.admin('GET', `/admin/v1/emails/${ids.receipt}`);
    expect(e).toMatchObject({
      id: ids.receipt,
      project: { slug: p.slug, name: 'Test project' },
      from: 'Acme <hello@acme.test>',
      to: ['Ann@inbox.test', 'bob@inbox.test'],
      cc: ['carl@inbox.test'],
      bcc: [],
      reply_to: [],
      subject: 'Your receipt #4711',
      status: 'sent',
      scheduled_at: null,
      bulk: false,
      html_size: Buffer.byteLength('<p>héllo</p>'),
      text_size: 5,
      tags: [
        { name: 'kind', value: 'receipt' },
        { name: 'vip', value: null },
      ],
    });
    expect(e.recipients.map((r: any) => [r.address, r.kind, r.status])).toEqual([
      ['Ann@inbox.test', 'to', 'sent'],
      ['bob@inbox.test', 'to', 'sent'],
      ['carl@inbox.test', 'cc', 'sent'],
    ]);
    expect(e.events[0]).toEqual({
      type: 'queued',
      recipient: null,
      attempt: null,
      at: expect.any(String),
      provider: null,
      mx: null,
      code: null,
      enhanced_code: null,
      response: null,
      cause: null,
      rule: null,
    });
    const sent = e.events.filter((x: any) => x.type === 'sent');
    expect(sent.map((x: any) => x.recipient).sort()).toEqual(['Ann@inbox.test', 'bob@inbox.test', 'carl@inbox.test']);
    // The MX's answer to DATA (its text; a message accepted was answered 250).
    expect(sent[0]).toMatchObject({ attempt: 1, provider: 'other', mx: 'mx.inbox.test', code: 250, response: 'OK: message queued', cause: null });
    // Oldest first.
    const times = e.events.map((x: any) => Date.parse(x.at));
    expect(times).toEqual([...times].sort((a: number, b: number) => a - b));

    const b = await stack.admin('GET', `/admin/v1/emails/${ids.bounce}`);
    expect(b.status).toBe('bounced');
    expect(b.recipients).toEqual([{ address: 'gone@inbox.test', kind: 'to', status: 'bounced', updated_at: expect.any(String) }]);
    expect(b.events.find((x: any) => x.type === 'bounced')).toMatchObject({
      recipient: 'gone@inbox.test',
      attempt: 1,
      provider: 'other',
      mx: expect.stringContaining('inbox.test'),
      code: 550,
      enhanced_code: '5.1.1',
      response: expect.stringContaining('User unknown'),
      cause: 'receiver',
      rule: null,
    });
    // Another project's email is the operator's to see too.
    expect((await stack.admin('GET', `/admin/v1/emails/${ids.theirs}`)).project.slug).toBe(q.slug);
  });

  it('answers an unknown email 404 and hostile input 400 or an empty page, never 500', async () => {
    // Path segments as sent (already encoded): a NUL, SQL, a LIKE pattern, an id of nobody.
    for (const id of ['0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee', 'nope', "1'%20OR%20'1'%3D'1", '%25', 'x'.repeat(100)]) {
      const r = await stack.adminApi('GET', `/admin/v1/emails/${id}`, token);
      expect([r.status, r.body.code], id).toEqual([404, 'NOT_FOUND']);
    }
    // A NUL in the path is refused before the route.
    const nul = await stack.adminApi('GET', '/admin/v1/emails/a%00b', token);
    expect([nul.status, nul.body.code]).toEqual([400, 'INVALID_REQUEST']);
    const long = await stack.adminApi('GET', `/admin/v1/emails/${'x'.repeat(500)}`, token);
    expect(long.status).toBeLessThan(500);
    expect([400, 404]).toContain(long.status);
    const bad = [
      'after=not-a-cursor',
      'after=%27%20OR%201%3D1',
      'since=yesterday',
      'until=2026-13-45T99:00:00Z',
      'since=2030-01-01&until=2020-01-01',
      'limit=0',
      'limit=101',
      'limit=ten',
      'status=lost',
      'id=123',
      'project=Not%20A%20Slug',
      'subject=a%00b',
      'to=x%0Ay',
      `subject=${'x'.repeat(1000)}`,
      `tag=${'t'.repeat(600)}`,
      'unknown=1',
    ];
    for (const query of bad) {
      const r = await stack.adminApi('GET', `/admin/v1/emails?${query}`, token);
      expect([r.status, r.body.code], query).toEqual([400, 'INVALID_REQUEST']);
      expect(r.body.error, query).toEqual(expect.any(String));
    }
    const empty = [
      "subject=' OR 1=1 --",
      'subject=%25',
      'subject=_',
      'from=%25%25',
      "to=a'@b.c; DROP TABLE emails",
      'to=%25@inbox.test',
      'tag=%25',
      'tag=kind:%25',
      'subject=%F0%9F%93%A7',
      'to=%C3%A9@inbox.test',
    ];
    for (const query of empty) {
      const r = await stack.adminApi('GET', `/admin/v1/emails?${query}`, token);
      expect([r.status, r.body.data], query).toEqual([200, []]);
    }
    // Bytes that are no UTF-8 (a lone surrogate's encoding): refused or found nowhere.
    const broken = await stack.adminApi('GET', '/admin/v1/emails?subject=%ED%A0%80', token);
    expect(broken.status === 400 ? broken.body.code : broken.body.data).toEqual(broken.status === 400 ? 'INVALID_REQUEST' : []);
    const unknown = await stack.adminApi('GET', '/admin/v1/emails?project=nosuch', token);
    expect([unknown.status, unknown.body.code]).toEqual([404, 'NOT_FOUND']);
    // The store survived all of it.
    expect((await search('to=ann@inbox.test')).data).toHaveLength(2);
  });

  it('needs the admin token', async () => {
    for (const path of ['/admin/v1/emails', `/admin/v1/emails/${ids.receipt}`]) {
      expect((await stack.adminApi('GET', path, undefined)).status).toBe(401);
      expect((await stack.adminApi('GET', path, 'wrong-token')).status).toBe(401);
    }
  });
});
