// Outcomes through the real gateway: loopback receivers answering 250, 550 5.1.1,
// 550 5.7.1 (policy), 421/451 and slowly; rejected mail retried by our plugin with
// growing delays and never suppressed; then real DSN and ARF messages and a
// List-Unsubscribe mail sent to the inbound port for the VERP addresses. Every
// transition shows in GET /v1/emails/:id and the webhooks with its details.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, sleep, type Project } from '../../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { replies, startMxSink, tempFailFirst, type MxSink, messageIdOf } from '../../helpers/mx-sink.js';
import { arf, dsn, sendToInbound } from '../../helpers/reports.js';
import { publishDomain } from './helpers.js';

let dns: DnsServer;
let sink: MxSink;
let stack: Stack;
let p: Project;
let inbound: number;
let hooks: http.Server;
const webhooks: any[] = [];

const sentTo = (id: string) => sink.messages.filter((m) => messageIdOf(m) === id);
const seq = (email: any) => email.events.map((e: any) => `${e.type}${e.attempt ? `#${e.attempt}` : ''}`);

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
      webhooks.push(JSON.parse(body));
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', r));
  stack = await Stack.start({
    env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port), POSTGATE_SENDING_IPS: '127.0.0.1' },
    config: {
      // Short schedules so retries happen within a test: 1 s between temporary failures, three tries;
      // rejected mail retried twice, 1 s then 2 s later.
      delivery: { retryDelays: [1], maxTempFailures: 3, connectTimeout: 5, rejectRetryDelays: [1, 2] },
      webhooks: { retryDelays: [1], maxAgeSeconds: 600, timeoutMs: 2000, allowCidrs: ['127.0.0.0/8'] },
    },
  });
  inbound = Number(stack.env.POSTGATE_INBOUND_PORT);
  p = await stack.createProject('outcomes');
  await stack.setPlan('outcomes', 'scale');
  await publishDomain(stack, p.keys.live, dns, 'acme.test');
  const url = `http://127.0.0.1:${(hooks.address() as { port: number }).port}/hooks`;
  expect((await stack.api('POST', '/v1/webhooks', p.keys.live, { url })).status).toBe(201);
}, 60_000);
afterAll(async () => {
  await stack?.stop();
  await sink?.close();
  await dns?.close();
  hooks?.close();
});

async function send(to: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await stack.api('POST', '/v1/emails', p.keys.live, { from: 'hello@acme.test', to, subject: `to ${to}`, text: 'x', ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return r.body.id;
}
const wait = (id: string, done: (e: any) => boolean, ms = 30_000) => stack.waitEmail(p.keys.live, id, done, ms);
const suppressions = async () => (await stack.api('GET', '/v1/suppressions', p.keys.live)).body.data as any[];
const suppressed = async (address: string) => (await suppressions()).find((s) => s.email === address);

describe('answers of the receiving server', () => {
  it('550 5.7.1 is rejected, retried by us with the next attempt, then sent; never suppressed', async () => {
    sink.setBehaviour('picky@inbox.test', { rcpt: [replies.policy] });
    // Lines that start with a dot are stored dot-stuffed: the retry must not stuff them again.
    const id = await send('picky@inbox.test', { text: '.NET and more\n..\nend' });
    const email = await wait(id, (e) => e.status === 'sent');
    expect(seq(email)).toEqual(['queued', 'sending#1', 'rejected#1', 'sending#2', 'sent#2']);
    const rejected = email.events.find((e: any) => e.type === 'rejected');
    expect(rejected).toMatchObject({
      recipient: 'picky@inbox.test',
      attempt: 1,
      mx: 'mx.inbox.test',
      enhanced_code: '5.7.1',
      cause: 'receiver',
      provider: 'other',
      response: expect.stringMatching(/^550 5\.7\.1 .*spam/),
      at: expect.any(String),
      next_attempt_at: expect.any(String),
    });
    expect(Date.parse(rejected.next_attempt_at) - Date.parse(rejected.at)).toBeGreaterThanOrEqual(900);
    const sending2 = email.events.filter((e: any) => e.type === 'sending')[1];
    expect(Date.parse(sending2.at)).toBeGreaterThanOrEqual(Date.parse(rejected.next_attempt_at) - 50);
    expect(sentTo(id)).toHaveLength(1);
    // The retry is the same signed message, not rebuilt.
    expect(sentTo(id)[0]!.raw.toString()).toMatch(/^Received: \(postgate\)[^\n]*\nDKIM-Signature:/);
    expect(sentTo(id)[0]!.raw.toString()).toMatch(/\r\n\r\n\.NET and more\r\n\.\.\r\nend/);
    expect(await suppressed('picky@inbox.test')).toBeUndefined();
  });

  it('a refusal that persists: rejected after each of the retries, with growing delay, then final; never suppressed', async () => {
    sink.setBehaviour('wall@inbox.test', { rcpt: Array(10).fill(replies.policy) });
    const id = await send('wall@inbox.test');
    const email = await wait(id, (e) => e.events.filter((x: any) => x.type === 'rejected').length === 3);
    expect(email.status).toBe('rejected');
    const rejected = email.events.filter((e: any) => e.type === 'rejected');
    expect(rejected.map((e: any) => e.attempt)).toEqual([1, 2, 3]);
    const gaps = rejected.slice(0, 2).map((e: any) => Date.parse(e.next_attempt_at) - Date.parse(e.at));
    expect(gaps[0]).toBeLessThan(gaps[1]);
    expect(rejected[2].next_attempt_at).toBeUndefined();
    await sleep(3000);
    expect(sink.attempts('wall@inbox.test')).toBe(3);
    expect(await suppressed('wall@inbox.test')).toBeUndefined();
  });

  it("a 451 that outlasts the retry schedule is rejected with the receiver's text and code, then retried; 421 then 250 is deferred then sent", async () => {
    sink.setBehaviour('busy@inbox.test', { rcpt: tempFailFirst(3, replies.tryLater) });
    sink.setBehaviour('closing@inbox.test', { data: [replies.closing] });
    const busy = await send('busy@inbox.test');
    const closing = await send('closing@inbox.test');
    const b = await wait(busy, (e) => e.status === 'sent');
    expect(seq(b)).toEqual(['queued', 'sending#1', 'deferred#1', 'sending#2', 'deferred#2', 'sending#3', 'rejected#3', 'sending#4', 'sent#4']);
    const deferred = b.events.find((e: any) => e.type === 'deferred');
    expect(deferred).toMatchObject({
      cause: 'receiver',
      enhanced_code: '4.3.0',
      mx: 'mx.inbox.test',
      response: expect.stringMatching(/^451 4\.3\.0/),
      next_attempt_at: expect.any(String),
    });
    expect(b.events.find((e: any) => e.type === 'rejected')).toMatchObject({
      cause: 'receiver',
      enhanced_code: '4.3.0',
      response: expect.stringMatching(/451 4\.3\.0/),
      next_attempt_at: expect.any(String),
    });
    const c = await wait(closing, (e) => e.status === 'sent');
    expect(seq(c)).toEqual(['queued', 'sending#1', 'deferred#1', 'sending#2', 'sent#2']);
    expect(c.events.find((e: any) => e.type === 'deferred')).toMatchObject({
      cause: 'receiver',
      enhanced_code: '4.7.0',
      response: expect.stringMatching(/^421 4\.7\.0/),
    });
    expect(await suppressed('busy@inbox.test')).toBeUndefined();
  });

  it('a slow receiver still gets it once; 550 5.1.1 bounces and suppresses', async () => {
    sink.setBehaviour('slow@inbox.test', { dataDelayMs: 3000 });
    sink.setBehaviour('gone@inbox.test', { rcpt: [replies.noSuchUser] });
    const slow = await send('slow@inbox.test');
    const gone = await send('gone@inbox.test');
    expect(seq(await wait(slow, (e) => e.status === 'sent'))).toEqual(['queued', 'sending#1', 'sent#1']);
    const g = await wait(gone, (e) => e.status === 'bounced');
    expect(g.events.find((e: any) => e.type === 'bounced')).toMatchObject({ enhanced_code: '5.1.1', cause: 'receiver', mx: 'mx.inbox.test' });
    expect(await suppressed('gone@inbox.test')).toMatchObject({ reason: 'bounced', scope: 'all', email_id: gone });
  });
});

describe('reports at the inbound port', () => {
  it('an asynchronous DSN (RFC 3464) bounces a sent email and suppresses the address', async () => {
    const id = await send('later@inbox.test');
    await wait(id, (e) => e.status === 'sent');
    const verp = sentTo(id)[0]!.mailFrom;
    // Like every DSN, sent with the null sender.
    const answer = await sendToInbound(
      inbound,
      '',
      verp,
      dsn(verp, [{ recipient: 'later@inbox.test', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 <later@inbox.test>: mailbox unavailable' }]),
    );
    expect(answer).toMatch(/^250/);
    const email = await wait(id, (e) => e.status === 'bounced');
    expect(email.events.at(-1)).toMatchObject({
      type: 'bounced',
      recipient: 'later@inbox.test',
      source: 'dsn',
      enhanced_code: '5.1.1',
      mx: 'mx.inbox.test',
      response: '550 5.1.1 <later@inbox.test>: mailbox unavailable',
    });
    expect(await suppressed('later@inbox.test')).toMatchObject({ reason: 'bounced', scope: 'all' });
  });

  it('a DSN that confirms delivery moves the email to delivered', async () => {
    const id = await send('confirm@inbox.test');
    await wait(id, (e) => e.status === 'sent');
    const verp = sentTo(id)[0]!.mailFrom;
    await sendToInbound(inbound, 'MAILER-DAEMON@mx.inbox.test', verp, dsn(verp, [{ recipient: 'confirm@inbox.test', action: 'delivered', status: '2.0.0' }]));
    const email = await wait(id, (e) => e.status === 'delivered');
    expect(email.events.at(-1)).toMatchObject({ type: 'delivered', source: 'dsn', recipient: 'confirm@inbox.test' });
  });

  it('an ARF complaint (RFC 5965) about bulk mail marks it complained and unsubscribes the recipient from bulk', async () => {
    const id = await send('angry@inbox.test', { bulk: true });
    await wait(id, (e) => e.status === 'sent');
    const verp = sentTo(id)[0]!.mailFrom;
    await sendToInbound(inbound, 'fbl@inbox.test', verp, arf({ to: verp, recipient: 'angry@inbox.test', feedbackType: 'abuse' }));
    const email = await wait(id, (e) => e.status === 'complained');
    expect(email.events.at(-1)).toMatchObject({ type: 'complained', source: 'arf', recipient: 'angry@inbox.test' });
    expect(await suppressed('angry@inbox.test')).toMatchObject({ reason: 'complained', scope: 'bulk' });
    expect(
      (await stack.api('POST', '/v1/emails', p.keys.live, { from: 'hello@acme.test', to: 'angry@inbox.test', subject: 'more', text: 'x', bulk: true })).status,
    ).toBe(422);
    await wait(await send('angry@inbox.test'), (e) => e.status === 'sent');
  });

  it('each recipient has its own return path: a DSN naming another recipient, or none, touches only its sender', async () => {
    const id = await send('first@inbox.test', { to: ['first@inbox.test', 'second@inbox.test'], cc: ['third@inbox.test'] });
    await wait(id, (e) => e.recipients.every((r: any) => r.status === 'sent'));
    const copies = sentTo(id);
    const paths = new Map(copies.map((m) => [m.rcptTo[0]!, m.mailFrom]));
    expect([...paths.keys()].sort()).toEqual(['first@inbox.test', 'second@inbox.test', 'third@inbox.test']);
    expect(new Set(paths.values()).size).toBe(3);
    // first's return path, with a DSN that claims second bounced.
    const first = paths.get('first@inbox.test')!;
    await sendToInbound(
      inbound,
      '',
      first,
      dsn(first, [{ recipient: 'second@inbox.test', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 no such user' }]),
    );
    let email = await wait(id, (e) => e.events.some((x: any) => x.type === 'bounced'));
    expect(email.recipients.find((r: any) => r.email === 'second@inbox.test').status).toBe('sent');
    expect(email.recipients.find((r: any) => r.email === 'first@inbox.test').status).toBe('bounced');
    expect(await suppressed('second@inbox.test')).toBeUndefined();
    // third's return path, with a DSN that names nobody: only third.
    const third = paths.get('third@inbox.test')!;
    await sendToInbound(inbound, '', third, dsn(third, [{ recipient: '', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 gone' }]));
    email = await wait(id, (e) => e.recipients.find((r: any) => r.email === 'third@inbox.test').status === 'bounced');
    expect(email.recipients.find((r: any) => r.email === 'second@inbox.test').status).toBe('sent');
    expect(await suppressed('second@inbox.test')).toBeUndefined();
    expect(await suppressed('third@inbox.test')).toMatchObject({ reason: 'bounced' });
  });

  it('one subscriber of a bulk mailing complaining suppresses that subscriber only', async () => {
    const subscribers = ['sub1@inbox.test', 'sub2@inbox.test', 'sub3@inbox.test'];
    const id = await send('sub1@inbox.test', { to: subscribers, bulk: true });
    await wait(id, (e) => e.recipients.every((r: any) => r.status === 'sent'));
    const path1 = sentTo(id).find((m) => m.rcptTo[0] === 'sub1@inbox.test')!.mailFrom;
    // sub1 forges a complaint about sub2 to its own return path.
    await sendToInbound(inbound, 'fbl@inbox.test', path1, arf({ to: path1, recipient: 'sub2@inbox.test', feedbackType: 'abuse' }));
    const email = await wait(id, (e) => e.status === 'complained');
    expect(email.recipients.map((r: any) => [r.email, r.status])).toEqual([
      ['sub1@inbox.test', 'complained'],
      ['sub2@inbox.test', 'sent'],
      ['sub3@inbox.test', 'sent'],
    ]);
    expect(await suppressed('sub2@inbox.test')).toBeUndefined();
    expect(await suppressed('sub3@inbox.test')).toBeUndefined();
    expect(await suppressed('sub1@inbox.test')).toMatchObject({ reason: 'complained', scope: 'bulk' });
  });

  it('mail to the List-Unsubscribe mailto address unsubscribes its recipient from bulk', async () => {
    const id = await send('quiet@inbox.test', { bulk: true });
    await wait(id, (e) => e.status === 'sent');
    const mailto = /<mailto:([^?>]+)\?subject=unsubscribe>/.exec(sentTo(id)[0]!.raw.toString())![1]!;
    await sendToInbound(inbound, 'quiet@inbox.test', mailto, Buffer.from(`From: quiet@inbox.test\r\nTo: ${mailto}\r\nSubject: unsubscribe\r\n\r\n`));
    const email = await wait(id, (e) => e.events.some((x: any) => x.type === 'unsubscribed'));
    expect(email.events.find((x: any) => x.type === 'unsubscribed')).toMatchObject({ recipient: 'quiet@inbox.test', source: 'mailto' });
    expect(email.status).toBe('sent');
    expect(await suppressed('quiet@inbox.test')).toMatchObject({ reason: 'unsubscribed', scope: 'bulk', email_id: id });
  });

  it('refuses addresses that are not ours; a forged return address changes nothing', async () => {
    await expect(sendToInbound(inbound, 'x@inbox.test', 'postmaster@pg-bounces.acme.test', Buffer.from('Subject: hi\r\n\r\nhi\r\n'))).rejects.toThrow(/550/);
    const id = await send('safe@inbox.test');
    await wait(id, (e) => e.status === 'sent');
    const verp = sentTo(id)[0]!.mailFrom;
    const forged = verp.replace(/\.([0-9a-f]{16})@/, (_m, mac: string) => `.${mac.startsWith('0') ? '1' : '0'}${mac.slice(1)}@`);
    expect(
      await sendToInbound(inbound, 'MAILER-DAEMON@evil.test', forged, dsn(forged, [{ recipient: 'safe@inbox.test', action: 'failed', status: '5.1.1' }])),
    ).toMatch(/^250/);
    await sleep(1500);
    expect((await stack.api('GET', `/v1/emails/${id}`, p.keys.live)).body.status).toBe('sent');
    expect(await suppressed('safe@inbox.test')).toBeUndefined();
  });
});

describe('webhooks', () => {
  it('carry every transition with its time, MX, SMTP response and attempt', async () => {
    const until = Date.now() + 15_000;
    const find = (type: string) => webhooks.find((w) => w.type === type && w.data.to?.[0] === 'picky@inbox.test');
    while (Date.now() < until && !(find('email.rejected') && find('email.sent'))) await sleep(100);
    expect(find('email.rejected').data).toMatchObject({
      status: 'rejected',
      event: {
        type: 'rejected',
        attempt: 1,
        mx: 'mx.inbox.test',
        enhanced_code: '5.7.1',
        response: expect.stringMatching(/^550/),
        at: expect.any(String),
        next_attempt_at: expect.any(String),
        cause: 'receiver',
      },
    });
    expect(find('email.sent').data).toMatchObject({ status: 'sent', event: { type: 'sent', attempt: 2, mx: 'mx.inbox.test', response: expect.any(String) } });
    expect(webhooks.some((w) => w.type === 'email.deferred' && w.data.event.cause === 'receiver' && w.data.event.enhanced_code)).toBe(true);
    expect(webhooks.some((w) => w.type === 'email.complained' && w.data.event.source === 'arf')).toBe(true);
  });
});
