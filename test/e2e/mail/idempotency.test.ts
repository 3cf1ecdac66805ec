// Idempotency keys over real HTTP and SMTP against the whole stack: a retried send with the
// same key answers the first answer and the receiving server gets one message; another
// request with the key is 409; ten racing retries send one email; batches; keys per project;
// bad keys; and after 24 h (the test clock) the key is free again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import nodemailer from 'nodemailer';
import type { SendMailOptions } from 'nodemailer';
import { Stack, sleep, type Project } from '../../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, type MxSink } from '../../helpers/mx-sink.js';

let stack: Stack;
let dns: DnsServer;
let sink: MxSink;
let acme: Project;
let other: Project;
let n = 0;

/** A recipient no other case mails, delivered to the sink. */
const rcpt = () => `idem${++n}-${Date.now()}@ok.test`;
const mail = (to: string, o: Record<string, unknown> = {}) => ({ from: 'Acme <hello@acme.test>', to, subject: 'Once', text: 'Only once', ...o });
const key = () => `key-${Math.random().toString(36).slice(2)}`;

const send = (p: Project, body: unknown, k?: string, extra: Record<string, string> = {}) =>
  stack.api('POST', '/v1/emails', p.keys.live, body, { ...(k === undefined ? {} : { 'Idempotency-Key': k }), ...extra });
const batch = (p: Project, body: unknown, k?: string, extra: Record<string, string> = {}) =>
  stack.api('POST', '/v1/emails/batch', p.keys.live, body, { ...(k === undefined ? {} : { 'Idempotency-Key': k }), ...extra });

/** Messages the sink received for `to`, after waiting for the first and then long enough for a duplicate to arrive. */
async function received(to: string, expected = 1): Promise<number> {
  const count = () => sink.messages.filter((m) => m.rcptTo.includes(to)).length;
  const until = Date.now() + 30_000;
  while (count() < expected && Date.now() < until) await sleep(100);
  await sleep(1500);
  return count();
}

beforeAll(async () => {
  dns = await startDnsServer([
    { type: 'MX', name: 'ok.test', exchange: 'mx.ok.test', priority: 10 },
    { type: 'A', name: 'mx.ok.test', address: '127.0.0.1' },
  ]);
  sink = await startMxSink();
  stack = await Stack.start({ env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port), POSTGATE_TEST_CLOCK: '1' } });
  acme = await stack.createProject('acme');
  other = await stack.createProject('other');
  for (const p of ['acme', 'other']) {
    await stack.verifyDomain(p, 'acme.test');
    await stack.setPlan(p, 'free', { rate: 100000 });
  }
});
afterAll(async () => {
  await stack?.stop();
  await sink?.close();
  await dns?.close();
});

describe('POST /v1/emails with Idempotency-Key', () => {
  it('the same key and body answer the first answer again and send one email', async () => {
    const to = rcpt();
    const k = key();
    const first = await send(acme, mail(to), k);
    expect(first.status).toBe(202);
    expect(first.body).toEqual({ id: expect.any(String), status: 'queued' });
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // The same body with its keys in another order is the same request.
    const { text, subject, ...rest } = mail(to);
    const again = await send(acme, { text, ...rest, subject }, k);
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await stack.api('GET', `/v1/emails/${first.body.id}`, acme.keys.live)).status).toBe(200);
    expect(await received(to)).toBe(1);
    const delivered = sink.messages.find((m) => m.rcptTo.includes(to))!.raw.toString();
    expect(delivered).not.toMatch(/^(resend-)?idempotency-key:/im);
  });

  it('the same key with another body is 409 IDEMPOTENCY_CONFLICT and sends nothing', async () => {
    const k = key();
    const to = rcpt();
    expect((await send(acme, mail(to), k)).status).toBe(202);
    const other = rcpt();
    const r = await send(acme, mail(other, { subject: 'Another' }), k);
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT', name: 'invalid_idempotent_request', error: expect.any(String) });
    expect(await received(other, 0)).toBe(0);
  });

  it('ten concurrent requests with one key send one email; each answer is that 202 or 409 in progress', async () => {
    const to = rcpt();
    const k = key();
    const answers = await Promise.all(Array.from({ length: 10 }, () => send(acme, mail(to), k)));
    const accepted = answers.filter((a) => a.status === 202);
    expect(accepted.length).toBeGreaterThanOrEqual(1);
    expect(new Set(accepted.map((a) => a.body.id)).size).toBe(1);
    for (const a of answers.filter((x) => x.status !== 202)) {
      expect(a.status).toBe(409);
      expect(a.body).toMatchObject({ code: 'IDEMPOTENCY_IN_PROGRESS', name: 'concurrent_idempotent_requests' });
      expect(a.headers.get('retry-after')).toBe('1');
    }
    const later = await send(acme, mail(to), k);
    expect(later.body).toEqual(accepted[0]!.body);
    expect(await received(to)).toBe(1);
  });

  it('a refusal is answered again the same way (same status, same id), nothing more recorded', async () => {
    const k = key();
    const body = { ...mail(rcpt()), from: 'hello@unverified.test' };
    const first = await send(acme, body, k);
    expect(first.status).toBe(403);
    expect(first.body).toMatchObject({ code: 'DOMAIN_NOT_VERIFIED', id: expect.any(String) });
    const again = await send(acme, body, k);
    expect(again.status).toBe(403);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });

  it('keys are per project: the same key in two projects sends two emails', async () => {
    const to = rcpt();
    const k = key();
    const a = await send(acme, mail(to), k);
    const b = await send(other, mail(to), k);
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(b.body.id).not.toBe(a.body.id);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(await received(to, 2)).toBe(2);
  });

  it('refuses an empty, too long or non-printable key with 400 INVALID_REQUEST', async () => {
    for (const bad of ['', 'k'.repeat(257), 'a\tb']) {
      const r = await send(acme, mail(rcpt()), bad);
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.body.code).toBe('INVALID_REQUEST');
    }
    expect((await send(acme, mail(rcpt()), 'k'.repeat(256))).status).toBe(202);
  });
});

describe('POST /v1/emails/batch with Idempotency-Key', () => {
  it('answers the same ids again and sends each email once; another validation mode is another request', async () => {
    const [x, y] = [rcpt(), rcpt()];
    const k = key();
    const body = [mail(x), mail(y), { from: 'hello@acme.test', subject: 'no recipient' }];
    const first = await batch(acme, body, k);
    expect(first.status).toBe(202);
    expect(first.body.data).toHaveLength(3);
    expect(first.body.data[2]).toMatchObject({ code: 'INVALID_REQUEST' });
    const again = await batch(acme, body, k);
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const strict = await batch(acme, body, k, { 'x-batch-validation': 'strict' });
    expect(strict.status).toBe(409);
    expect(strict.body.code).toBe('IDEMPOTENCY_CONFLICT');
    expect(await received(x)).toBe(1);
    expect(sink.messages.filter((m) => m.rcptTo.includes(y))).toHaveLength(1);
  });
});

describe('SMTP submission with an idempotency key header', () => {
  const submit = async (m: SendMailOptions) => {
    const t = nodemailer.createTransport({
      host: '127.0.0.1',
      port: Number(stack.env.POSTGATE_SMTP_PORT),
      auth: { user: 'key', pass: acme.keys.live },
      tls: { rejectUnauthorized: false },
    });
    try {
      return await t.sendMail(m);
    } finally {
      t.close();
    }
  };
  const idOf = (response: string) => /queued as ([0-9a-f-]{36})$/.exec(response)?.[1];

  it('the same key and message (new Message-ID and Date each time) answer the same id; one email; the header is not sent on', async () => {
    const to = rcpt();
    for (const header of ['Idempotency-Key', 'Resend-Idempotency-Key']) {
      const k = key();
      const m = { from: 'Acme <hello@acme.test>', to, subject: `Via SMTP ${header}`, text: 'Hello', headers: { [header]: k } };
      const first = await submit(m);
      const again = await submit(m);
      expect(idOf(first.response)).toBeDefined();
      expect(idOf(again.response)).toBe(idOf(first.response));
    }
    expect(await received(to, 2)).toBe(2);
    for (const m of sink.messages.filter((x) => x.rcptTo.includes(to))) expect(m.raw.toString()).not.toMatch(/^(resend-)?idempotency-key:/im);
  });

  it('the same key with another message is refused with a 5xx naming the conflict', async () => {
    const k = key();
    const to = rcpt();
    await submit({ from: 'hello@acme.test', to, subject: 'First', text: 'a', headers: { 'Resend-Idempotency-Key': k } });
    await expect(submit({ from: 'hello@acme.test', to, subject: 'Second', text: 'b', headers: { 'Resend-Idempotency-Key': k } })).rejects.toMatchObject({
      responseCode: 550,
      response: expect.stringMatching(/^550 5\.6\.0 IDEMPOTENCY_CONFLICT: /),
    });
    // A key used over HTTP is another request over SMTP.
    const h = key();
    expect((await send(acme, mail(rcpt()), h)).status).toBe(202);
    await expect(submit({ from: 'hello@acme.test', to, subject: 'x', text: 'x', headers: { 'Idempotency-Key': h } })).rejects.toMatchObject({
      responseCode: 550,
    });
    await expect(submit({ from: 'hello@acme.test', to, subject: 'x', text: 'x', headers: { 'Idempotency-Key': 'k'.repeat(257) } })).rejects.toMatchObject({
      responseCode: 550,
      response: expect.stringMatching(/INVALID_REQUEST: Idempotency-Key must be at most 256 characters/),
    });
  });
});

describe('the 24 h window', () => {
  it('after 24 h the same key sends a new email', async () => {
    const to = rcpt();
    const k = key();
    const first = await send(acme, mail(to), k);
    expect(first.status).toBe(202);
    try {
      await stack.admin('POST', '/admin/v1/test/clock', { offset_ms: 24 * 3600_000 - 60_000 });
      expect((await send(acme, mail(to), k)).body.id).toBe(first.body.id);
      await stack.admin('POST', '/admin/v1/test/clock', { offset_ms: 24 * 3600_000 + 1000 });
      const later = await send(acme, mail(to), k);
      expect(later.status).toBe(202);
      expect(later.body.id).not.toBe(first.body.id);
      expect(later.headers.get('idempotent-replayed')).toBeNull();
    } finally {
      await stack.admin('POST', '/admin/v1/test/clock', { offset_ms: 0 });
    }
  });
});
