// The real `resend` npm package pointed at postgate by RESEND_BASE_URL, as a team
// moving from Resend would: every method it has for emails, batches, domains and
// webhooks, answered in the shapes it reads. Mail really goes through the gateway to
// a receiving server on loopback, found over DNS on loopback.
import { simpleParser } from 'mailparser';
import { Resend } from 'resend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, type MxSink, messageIdOf } from '../../helpers/mx-sink.js';
import { Stack, type Project } from '../../helpers/stack.js';

let dns: DnsServer;
let sink: MxSink;
let stack: Stack;
let p: Project;
let resend: Resend;

const received = async (id: string) => {
  const until = Date.now() + 20_000;
  while (Date.now() < until) {
    const m = sink.messages.find((x) => messageIdOf(x) === id);
    if (m) return m;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`email ${id} never reached the receiving server`);
};
const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();
let n = 0;
const to = () => `sdk${++n}@inbox.test`;

beforeAll(async () => {
  sink = await startMxSink();
  dns = await startDnsServer([
    { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
    { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
  ]);
  stack = await Stack.start({ env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port) } });
  p = await stack.createProject('from-resend');
  await stack.setPlan('from-resend', 'scale', { rate: 100000 });
  await stack.verifyDomain('from-resend', 'acme.test');
  // The one change a Resend user makes: the base URL.
  process.env.RESEND_BASE_URL = `${stack.url}/v1`;
  resend = new Resend(p.keys.live);
});
afterAll(async () => {
  delete process.env.RESEND_BASE_URL;
  await stack?.stop();
  await sink?.close();
  await dns?.close();
});

describe('resend SDK: emails', () => {
  it('emails.send with tags as {name, value}, cc/bcc/replyTo as strings, headers; the receiver gets it', async () => {
    const { data, error } = await resend.emails.send({
      from: 'Acme <hello@acme.test>',
      to: to(),
      cc: to(),
      bcc: to(),
      replyTo: 'support@acme.test',
      subject: 'Welcome from the SDK',
      html: '<p>Hello <b>there</b></p>',
      text: 'Hello there',
      headers: { 'X-Entity-Ref-ID': 'ref-1' },
      tags: [{ name: 'category', value: 'welcome' }],
    });
    expect(error).toBeNull();
    expect(data?.id).toEqual(expect.any(String));
    const m = await simpleParser((await received(data!.id)).raw);
    expect(m.subject).toBe('Welcome from the SDK');
    expect(m.headers.get('x-entity-ref-id')).toBe('ref-1');
    expect(m.replyTo?.text).toBe('support@acme.test');
    expect(m.text?.trim()).toBe('Hello there');
  });

  it('emails.send with attachments (a binary and an inline image by content id)', async () => {
    const pdf = Buffer.from([0x25, 0x50, 0x44, 0x46, 0x2d, ...Array.from({ length: 2000 }, (_, i) => (i * 7) % 256)]);
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
    const { data, error } = await resend.emails.send({
      from: 'Acme <hello@acme.test>',
      to: to(),
      subject: 'Invoice',
      html: '<p>Logo: <img src="cid:logo"></p>',
      attachments: [
        { filename: 'invoice.pdf', content: pdf },
        { filename: 'logo.png', content: png.toString('base64'), contentType: 'image/png', contentId: 'logo' },
      ],
    });
    expect(error).toBeNull();
    const m = await simpleParser((await received(data!.id)).raw);
    const byName = Object.fromEntries(m.attachments.map((x) => [x.filename, x]));
    expect(byName['invoice.pdf']?.content.equals(pdf)).toBe(true);
    expect(byName['logo.png']?.content.equals(png)).toBe(true);
    expect(byName['logo.png']?.cid).toBe('logo');
  });

  it('emails.get carries the Resend fields the SDK types promise', async () => {
    const { data: sent } = await resend.emails.send({ from: 'hello@acme.test', to: to(), subject: 'Get me', text: 'body' });
    const { data, error } = await resend.emails.get(sent!.id);
    expect(error).toBeNull();
    expect(data).toMatchObject({
      object: 'email',
      id: sent!.id,
      from: 'hello@acme.test',
      subject: 'Get me',
      text: 'body',
      html: null,
      scheduled_at: null,
      last_event: expect.any(String),
    });
    expect(data!.to).toHaveLength(1);
  });

  it('emails.list pages with limit and after', async () => {
    for (let i = 0; i < 3; i++) await resend.emails.send({ from: 'hello@acme.test', to: to(), subject: `List ${i}`, text: 'x' });
    const first = await resend.emails.list({ limit: 2 });
    expect(first.error).toBeNull();
    expect(first.data).toMatchObject({ object: 'list', has_more: true });
    expect(first.data!.data).toHaveLength(2);
    const next = await resend.emails.list({ limit: 2, after: first.data!.data[1]!.id });
    expect(next.data!.data[0]!.id).not.toBe(first.data!.data[1]!.id);
    expect(next.data!.data[0]!.id < first.data!.data[1]!.id).toBe(true);
  });

  it('scheduledAt, emails.update to reschedule, emails.cancel', async () => {
    const { data, error } = await resend.emails.send({ from: 'hello@acme.test', to: to(), subject: 'Later', text: 'x', scheduledAt: inSeconds(3600) });
    expect(error).toBeNull();
    const later = inSeconds(7200);
    const moved = await resend.emails.update({ id: data!.id, scheduledAt: later });
    expect(moved.error).toBeNull();
    expect(moved.data).toMatchObject({ object: 'email', id: data!.id });
    expect((await resend.emails.get(data!.id)).data).toMatchObject({ scheduled_at: later, last_event: 'scheduled' });
    const canceled = await resend.emails.cancel(data!.id);
    expect(canceled.error).toBeNull();
    expect(canceled.data).toMatchObject({ object: 'email', id: data!.id });
    expect((await resend.emails.get(data!.id)).data?.last_event).toBe('canceled');
    // An email that is not scheduled: refused with one of the names the SDK knows.
    const { data: now } = await resend.emails.send({ from: 'hello@acme.test', to: to(), subject: 'Now', text: 'x' });
    const late = await resend.emails.cancel(now!.id);
    expect(late.data).toBeNull();
    expect(late.error).toMatchObject({ statusCode: 409, name: 'validation_error' });
  });

  it("scheduledAt in words, as Resend's docs write it", async () => {
    const before = Date.now();
    const { data, error } = await resend.emails.send({ from: 'hello@acme.test', to: to(), subject: 'In a minute', text: 'x', scheduledAt: 'in 1 min' });
    expect(error).toBeNull();
    const got = (await resend.emails.get(data!.id)).data!;
    expect(got.last_event).toBe('scheduled');
    expect(Date.parse(got.scheduled_at!) - before).toBeGreaterThanOrEqual(60_000);
    const moved = await resend.emails.update({ id: data!.id, scheduledAt: 'tomorrow at 9am' });
    expect(moved.error).toBeNull();
    expect((await resend.emails.get(data!.id)).data?.scheduled_at).toMatch(/T09:00:00\.000Z$/);
    expect((await resend.emails.cancel(data!.id)).error).toBeNull();
  });

  it('idempotencyKey: a retry answers the first id and sends nothing new', async () => {
    const email = { from: 'hello@acme.test', to: to(), subject: 'Once', text: 'only once' };
    const a = await resend.emails.send(email, { idempotencyKey: 'order-123/welcome' });
    const b = await resend.emails.send(email, { idempotencyKey: 'order-123/welcome' });
    expect(a.error).toBeNull();
    expect(b.data?.id).toBe(a.data?.id);
    const other = await resend.emails.send({ ...email, text: 'changed' }, { idempotencyKey: 'order-123/welcome' });
    expect(other.error).toMatchObject({ statusCode: 409, name: 'invalid_idempotent_request' });
    await received(a.data!.id);
    expect(sink.messages.filter((m) => m.rcptTo.includes(email.to))).toHaveLength(1);
  });

  it('errors are read by the SDK as {name, message, statusCode}', async () => {
    const { data, error } = await resend.emails.send({ from: 'not an address', to: to(), subject: 'x', text: 'x' });
    expect(data).toBeNull();
    expect(error).toMatchObject({ name: 'validation_error', statusCode: 400, message: expect.stringContaining('from') });
    const wrong = await new Resend('re_not_a_key').emails.get('x');
    expect(wrong.error).toMatchObject({ name: 'invalid_api_key', statusCode: 401 });
    const missing = await resend.emails.get('00000000-0000-7000-8000-000000000000');
    expect(missing.error).toMatchObject({ name: 'not_found', statusCode: 404 });
  });
});

describe('resend SDK: batch', () => {
  it('batch.send (strict by default in the SDK) sends all, or refuses all when one is invalid', async () => {
    const ok = await resend.batch.send([
      { from: 'hello@acme.test', to: to(), subject: 'B1', text: 'x' },
      { from: 'hello@acme.test', to: to(), subject: 'B2', text: 'x', tags: [{ name: 't', value: 'v' }] },
    ]);
    expect(ok.error).toBeNull();
    expect(ok.data?.data.map((d) => typeof d.id)).toEqual(['string', 'string']);
    const bad = await resend.batch.send([
      { from: 'hello@acme.test', to: to(), subject: 'B3', text: 'x' },
      { from: 'hello@acme.test', to: 'nobody', subject: 'B4', text: 'x' },
    ]);
    expect(bad.data).toBeNull();
    expect(bad.error).toMatchObject({ name: 'validation_error', statusCode: 422 });
  });

  it("batch.send with batchValidation: 'permissive' sends the valid ones and reports the others", async () => {
    const r = await resend.batch.send(
      [
        { from: 'hello@acme.test', to: to(), subject: 'P1', text: 'x' },
        { from: 'hello@acme.test', to: 'nobody', subject: 'P2', text: 'x' },
      ],
      { batchValidation: 'permissive' },
    );
    expect(r.error).toBeNull();
    expect(r.data?.data).toHaveLength(1);
    expect((r.data as unknown as { errors: Array<{ index: number }> }).errors).toEqual([expect.objectContaining({ index: 1 })]);
  });
});

describe('resend SDK: domains', () => {
  it('create (customReturnPath, region), list, get, update, verify, remove', async () => {
    const created = await resend.domains.create({ name: 'sdk-shop.test', customReturnPath: 'bounces', region: 'eu-west-1' });
    expect(created.error).toBeNull();
    const d = created.data!;
    expect(d).toMatchObject({ name: 'sdk-shop.test', status: 'pending', region: 'eu-west-1' });
    expect(d.records.some((r) => r.record === 'SPF' && r.type === 'MX' && r.name === 'bounces.sdk-shop.test')).toBe(true);
    expect(d.records.every((r) => r.ttl === 'Auto')).toBe(true);

    const list = await resend.domains.list();
    expect(list.data).toMatchObject({ object: 'list', has_more: false });
    expect(list.data!.data.map((x) => x.name)).toContain('sdk-shop.test');
    const got = await resend.domains.get(d.id);
    expect(got.data).toMatchObject({ object: 'domain', id: d.id, name: 'sdk-shop.test' });

    // The SDK sends an empty JSON body for verify and remove, and undefined options for update.
    const updated = await resend.domains.update({ id: d.id });
    expect(updated.error).toBeNull();
    expect(updated.data).toMatchObject({ object: 'domain', id: d.id });
    // The settings Resend's domain takes are kept and shown (what they do is tested where they act).
    expect(got.data).toMatchObject({
      open_tracking: false,
      click_tracking: false,
      tracking_subdomain: 'links',
      capabilities: { sending: 'enabled', receiving: 'disabled' },
    });
    const settings = await resend.domains.update({ id: d.id, openTracking: true, tls: 'enforced', trackingSubdomain: 'go' });
    expect(settings.error).toBeNull();
    expect((await resend.domains.get(d.id)).data).toMatchObject({ open_tracking: true, click_tracking: false, tracking_subdomain: 'go' });
    const raw = await (await fetch(`${stack.url}/v1/domains/${d.id}`, { headers: { authorization: `Bearer ${p.keys.live}` } })).json();
    expect(raw).toMatchObject({ tls: 'enforced', open_tracking: true });
    const badLabel = await resend.domains.update({ id: d.id, trackingSubdomain: 'not a label' });
    expect(badLabel.error).toMatchObject({ statusCode: 400, name: 'validation_error' });

    dns.add({ type: 'TXT', name: 'sdk-shop.test', value: 'v=spf1 -all' });
    const verified = await resend.domains.verify(d.id);
    expect(verified.error).toBeNull();
    expect(verified.data).toMatchObject({ object: 'domain', id: d.id });

    const removed = await resend.domains.remove(d.id);
    expect(removed.error).toBeNull();
    expect(removed.data).toMatchObject({ object: 'domain', id: d.id, deleted: true });
    expect((await resend.domains.get(d.id)).error).toMatchObject({ statusCode: 404 });
  });

  it('domains.list pages with limit and after, as emails.list does; a malformed cursor is refused', async () => {
    for (const name of ['page-a.test', 'page-b.test', 'page-c.test']) expect((await resend.domains.create({ name })).error).toBeNull();
    const all = (await resend.domains.list()).data!;
    expect(all.has_more).toBe(false);
    const names = all.data.map((d) => d.name);
    const first = await resend.domains.list({ limit: 1 });
    expect(first.error).toBeNull();
    expect(first.data).toMatchObject({ object: 'list', has_more: true });
    expect(first.data!.data.map((d) => d.name)).toEqual(names.slice(0, 1));
    const seen = [...first.data!.data];
    for (let page = first.data!; page.has_more; ) {
      const next = await resend.domains.list({ limit: 2, after: seen.at(-1)!.id });
      expect(next.error).toBeNull();
      page = next.data!;
      seen.push(...page.data);
    }
    expect(seen.map((d) => d.name)).toEqual(names);
    const back = await resend.domains.list({ limit: 1, before: seen[1]!.id });
    expect(back.data!.data.map((d) => d.id)).toEqual([seen[0]!.id]);
    const bad = await resend.domains.list({ limit: 1, after: 'not-an-id' });
    expect(bad.data).toBeNull();
    expect(bad.error).toMatchObject({ statusCode: 400, name: 'validation_error' });
  });

  it('a custom return path is the envelope sender of the mail that domain sends', async () => {
    const created = await resend.domains.create({ name: 'rp-shop.test', customReturnPath: 'mail-back' });
    await stack.verifyDomain('from-resend', 'rp-shop.test');
    const { data } = await resend.emails.send({ from: 'hello@rp-shop.test', to: to(), subject: 'Return path', text: 'x' });
    const m = await received(data!.id);
    expect(m.mailFrom).toMatch(/^b\+[0-9a-f]{32}\.0\.[0-9a-f]{16}@mail-back\.rp-shop\.test$/);
    expect(created.data?.id).toEqual(expect.any(String));
  });
});

describe('resend SDK: webhooks', () => {
  it('create with {endpoint, events}, list, get, update, remove', async () => {
    const created = await resend.webhooks.create({ endpoint: 'https://hooks.example.com/resend', events: ['email.delivered', 'email.bounced'] });
    expect(created.error).toBeNull();
    const id = created.data!.id;
    expect(created.data).toMatchObject({ object: 'webhook', id });
    const secret = created.data!.signing_secret;
    expect(secret).toMatch(/^whsec_/);
    const list = await resend.webhooks.list();
    expect(list.error).toBeNull();
    expect(list.data!.data.map((w) => w.id)).toContain(id);
    // As Resend's list: no signing secret in it; the single get has it.
    expect(list.data!.data.filter((w) => 'signing_secret' in w || 'secret' in w)).toEqual([]);
    const got = await resend.webhooks.get(id);
    expect(got.data).toMatchObject({
      id,
      endpoint: 'https://hooks.example.com/resend',
      events: expect.arrayContaining(['email.delivered', 'email.bounced']),
      signing_secret: secret,
    });
    const updated = await resend.webhooks.update(id, { events: ['email.complained'] });
    expect(updated.error).toBeNull();
    expect((await resend.webhooks.get(id)).data?.events).toEqual(['email.complained']);
    const removed = await resend.webhooks.remove(id);
    expect(removed.error).toBeNull();
    expect((await resend.webhooks.get(id)).error).toMatchObject({ statusCode: 404 });
  });
});
