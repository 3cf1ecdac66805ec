// DKIM, SPF and DMARC as a receiving server sees them, and one-click unsubscribe:
// a domain added through the API, its records published in the loopback DNS server,
// mail sent through the real gateway to a loopback MX, and checked there with
// mailauth.authenticate. Then the List-Unsubscribe links are followed as Gmail would.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simpleParser } from 'mailparser';
import libmime from 'libmime';
import { Stack, type Project } from '../../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, type MxSink, messageIdOf } from '../../helpers/mx-sink.js';
import { authResults, publishDomain } from './helpers.js';

let dns: DnsServer;
let sink: MxSink;
let stack: Stack;
let p: Project;

const sentTo = (id: string) => sink.messages.filter((m) => messageIdOf(m) === id);

beforeAll(async () => {
  sink = await startMxSink();
  dns = await startDnsServer([
    { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
    { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
  ]);
  stack = await Stack.start({
    env: {
      POSTGATE_DNS_SERVERS: dns.address,
      POSTGATE_DELIVERY_PORT: String(sink.port),
      // The SPF records the domains API writes authorise this address, which is where mail comes from here.
      POSTGATE_SENDING_IPS: '127.0.0.1',
      POSTGATE_BASE_URL: 'https://mail.postgate.test',
    },
  });
  p = await stack.createProject('signer');
  await publishDomain(stack, p.keys.live, dns, 'acme.test');
});
afterAll(async () => {
  await stack?.stop();
  await sink?.close();
  await dns?.close();
});

async function send(body: Record<string, unknown>) {
  const r = await stack.api('POST', '/v1/emails', p.keys.live, {
    from: 'Acme <hello@acme.test>',
    subject: 'Hello',
    text: 'Hi there',
    html: '<p>Hi there</p>',
    ...body,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  await stack.waitEmail(p.keys.live, r.body.id, (e) => e.status === 'sent');
  return r.body.id as string;
}

describe('From is one mailbox, headers fit in a line, and DKIM over-signs', () => {
  const lines = (raw: Buffer) => raw.toString('latin1').split('\r\n');

  it('refuses a from that hides another mailbox (list or group), in single and batch sends', async () => {
    const spoofs = [
      'ceo@bank.test, <hello@acme.test>',
      'undisclosed:ceo@bank.test; <hello@acme.test>',
      'CEO (bank) <hello@acme.test>',
      'a@b.test <hello@acme.test>',
      'x:; <hello@acme.test>',
    ];
    for (const from of spoofs) {
      const r = await stack.api('POST', '/v1/emails', p.keys.live, { from, to: 'ann@inbox.test', subject: 'Spoof', text: 'x' });
      expect([from, r.status, r.body.code]).toEqual([from, 400, 'INVALID_REQUEST']);
      const b = await stack.api('POST', '/v1/emails/batch', p.keys.live, [{ from, to: 'ann@inbox.test', subject: 'Spoof', text: 'x' }]);
      expect([from, b.body.data[0].code]).toEqual([from, 'INVALID_REQUEST']);
    }
    expect(sink.messages.filter((m) => m.raw.toString().includes('Subject: Spoof'))).toEqual([]);
  });

  it('a display name with commas, quotes and non-ASCII arrives as one safely encoded mailbox', async () => {
    const id = await send({ from: '"Doe, John (Ünïcode) [CEO]" <hello@acme.test>', to: 'ann@inbox.test' });
    const parsed = await simpleParser(sentTo(id)[0]!.raw);
    expect(parsed.from!.value).toEqual([{ name: 'Doe, John (Ünïcode) [CEO]', address: 'hello@acme.test' }]);
  });

  it('folds long header values: no delivered line passes 998 octets, and they decode back', async () => {
    const subject = 's'.repeat(998);
    const solid = 'v'.repeat(990);
    const spaced = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ');
    const id = await send({ to: 'ann@inbox.test', subject, headers: { 'X-Solid': solid, 'X-Spaced': spaced } });
    const got = sentTo(id)[0]!;
    expect(Math.max(...lines(got.raw).map((l) => Buffer.byteLength(l, 'latin1')))).toBeLessThanOrEqual(998);
    const parsed = await simpleParser(got.raw);
    expect(parsed.subject).toBe(subject);
    // mailparser leaves X- headers encoded; a reader decodes the encoded words.
    expect(libmime.decodeWords(parsed.headers.get('x-solid') as string)).toBe(solid);
    expect(parsed.headers.get('x-spaced')).toBe(spaced);
    expect((await authResults(got.raw, got.mailFrom, dns)).dkim).toEqual(['pass']);
  });

  it('over-signs From, Subject and To: a header of that name added after signing breaks DKIM', async () => {
    const id = await send({ to: 'ann@inbox.test' });
    const got = sentTo(id)[0]!;
    expect((await authResults(got.raw, got.mailFrom, dns)).dkim).toEqual(['pass']);
    const sig = /^DKIM-Signature:[\s\S]*?(?=\r\n\S)/m.exec(got.raw.toString())![0].replace(/\s+/g, '');
    const h = /;h=([^;]+)/.exec(sig)![1]!.toLowerCase().split(':');
    for (const name of ['from', 'subject', 'to']) expect(h.filter((x) => x === name).length, name).toBe(2);
    for (const added of ['From: CEO <ceo@bank.test>', 'Subject: Urgent wire transfer', 'To: victim@inbox.test']) {
      const forged = Buffer.concat([Buffer.from(`${added}\r\n`), got.raw]);
      expect([added, (await authResults(forged, got.mailFrom, dns)).dkim]).not.toEqual([added, ['pass']]);
    }
  });
});

describe('signing and the return path', () => {
  it('transactional mail passes DKIM, SPF and DMARC at the receiver; VERP envelope; Feedback-ID; no List-Unsubscribe', async () => {
    const id = await send({ to: 'ann@inbox.test' });
    const [got] = sentTo(id);
    expect(got!.mailFrom).toMatch(/^b\+[0-9a-f]{32}\.0\.[0-9a-f]{16}@pg-bounces\.acme\.test$/);
    expect(got!.mailFrom.slice(2, 34)).toBe(id.replace(/-/g, ''));
    const auth = await authResults(got!.raw, got!.mailFrom, dns);
    expect(auth).toMatchObject({ dkim: ['pass'], dkimDomain: 'acme.test', spf: 'pass', dmarc: 'pass' });
    const parsed = await simpleParser(got!.raw);
    expect(parsed.headers.get('feedback-id')).toBe(`${p.id}:transactional:postgate`);
    expect(parsed.headers.has('list-unsubscribe')).toBe(false);
    const sig = got!.raw.toString().match(/^DKIM-Signature:[\s\S]*?(?=\r\n\S)/m)![0];
    expect(sig).toContain('c=relaxed/relaxed');
    expect(sig).toMatch(/s=pg\d{6}/);
  });

  it('bulk mail carries List-Unsubscribe (https + mailto) and List-Unsubscribe-Post, both signed; each recipient has its own link', async () => {
    const id = await send({ to: ['bea@inbox.test', 'cid@inbox.test'], subject: 'Spring news', bulk: true });
    const copies = sentTo(id);
    expect(copies.map((c) => c.rcptTo).sort()).toEqual([['bea@inbox.test'], ['cid@inbox.test']]);
    const links = new Set<string>();
    for (const c of copies) {
      const auth = await authResults(c.raw, c.mailFrom, dns);
      expect(auth).toMatchObject({ dkim: ['pass'], spf: 'pass', dmarc: 'pass' });
      const raw = c.raw.toString();
      const lu = /^List-Unsubscribe: (.*)$/m.exec(raw)![1]!;
      expect(lu).toMatch(
        /^<https:\/\/mail\.postgate\.test\/unsubscribe\/[0-9a-f]{32}\.\d\.[0-9a-f]{16}>, <mailto:u\+[0-9a-f]{32}\.\d\.[0-9a-f]{16}@pg-bounces\.acme\.test\?subject=unsubscribe>$/,
      );
      expect(raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r$/m);
      expect(raw).toMatch(/^Feedback-ID: [^:]+:bulk:postgate\r$/m);
      const h = /\bh=([^;]+);/
        .exec(raw.match(/^DKIM-Signature:[\s\S]*?(?=\r\n\S)/m)![0].replace(/\r\n\s+/g, ''))![1]!
        .toLowerCase()
        .split(':')
        .map((x) => x.trim());
      expect(h).toEqual(
        expect.arrayContaining([
          'list-unsubscribe',
          'list-unsubscribe-post',
          'feedback-id',
          'from',
          'to',
          'subject',
          'date',
          'message-id',
          'mime-version',
          'content-type',
        ]),
      );
      links.add(lu);
    }
    expect(links.size).toBe(2);
  });

  it('one-click: GET shows a page and changes nothing; POST unsubscribes from bulk only; later bulk fails, transactional goes', async () => {
    const id = await send({ to: 'dora@inbox.test', subject: 'Weekly digest', bulk: true });
    const link = /^List-Unsubscribe: <https:\/\/mail\.postgate\.test(\/unsubscribe\/[^>]+)>/m.exec(sentTo(id)[0]!.raw.toString())![1]!;

    const page = await fetch(stack.url + link);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    // Its one button unsubscribes: no other site may frame it (clickjacking).
    expect(page.headers.get('content-security-policy')).toMatch(/(^|; )frame-ancestors 'none'(;|$)/);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const html = await page.text();
    expect(html).toContain('Test project');
    expect(html).toContain('d***@inbox.test');
    expect(html).toMatch(/<form method="post">/);
    expect((await stack.api('GET', '/v1/suppressions', p.keys.live)).body.data).toEqual([]);

    // What Gmail sends: a form POST, no cookies, no credentials; the answer is 200, not a redirect.
    const post = await fetch(stack.url + link, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
      redirect: 'manual',
    });
    expect(post.status).toBe(200);
    expect(post.headers.get('x-frame-options')).toBe('DENY');
    const again = await fetch(stack.url + link, { method: 'POST', body: new URLSearchParams({ 'List-Unsubscribe': 'One-Click' }) });
    expect(again.status).toBe(200);
    const multipart = new FormData();
    multipart.set('List-Unsubscribe', 'One-Click');
    expect((await fetch(stack.url + link, { method: 'POST', body: multipart })).status).toBe(200);

    const list = (await stack.api('GET', '/v1/suppressions', p.keys.live)).body.data;
    expect(list).toEqual([expect.objectContaining({ email: 'dora@inbox.test', reason: 'unsubscribed', scope: 'bulk', email_id: id })]);
    const email = (await stack.api('GET', `/v1/emails/${id}`, p.keys.live)).body;
    expect(email.events.filter((e: any) => e.type === 'unsubscribed')).toEqual([
      expect.objectContaining({ recipient: 'dora@inbox.test', source: 'one-click' }),
    ]);

    const bulk = await stack.api('POST', '/v1/emails', p.keys.live, {
      from: 'hello@acme.test',
      to: 'dora@inbox.test',
      subject: 'More news',
      text: 'x',
      bulk: true,
    });
    expect(bulk.status).toBe(422);
    expect(bulk.body.code).toBe('RECIPIENT_IN_SUPPRESSION_LIST');
    const failed = (await stack.api('GET', `/v1/emails/${bulk.body.id}`, p.keys.live)).body;
    expect(failed.status).toBe('failed');

    // With another recipient the email goes to them, and says why dora was left out.
    const mixed = await stack.api('POST', '/v1/emails', p.keys.live, {
      from: 'hello@acme.test',
      to: ['dora@inbox.test', 'emil@inbox.test'],
      subject: 'More news',
      text: 'x',
      bulk: true,
    });
    const m = await stack.waitEmail(p.keys.live, mixed.body.id, (e) => e.status === 'sent');
    expect(m.recipients.find((r: any) => r.email === 'dora@inbox.test').status).toBe('failed');
    expect(m.events).toContainEqual(expect.objectContaining({ type: 'failed', recipient: 'dora@inbox.test', reason: 'unsubscribed' }));

    const receipt = await send({ to: 'dora@inbox.test', subject: 'Your receipt' });
    expect(sentTo(receipt)).toHaveLength(1);
  });

  it('a link that was tampered with is refused, and the API documents the routes', async () => {
    const bad = await fetch(`${stack.url}/unsubscribe/${'0'.repeat(32)}.0.${'f'.repeat(16)}`, {
      method: 'POST',
      body: 'List-Unsubscribe=One-Click',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(bad.status).toBe(404);
    expect(await bad.json()).toMatchObject({ code: 'NOT_FOUND' });
    const badPage = await fetch(`${stack.url}/unsubscribe/${'0'.repeat(32)}.0.${'f'.repeat(16)}`, { headers: { accept: 'text/html' } });
    expect(badPage.status).toBe(404);
    expect(await badPage.text()).toContain('not valid');
    expect(badPage.headers.get('x-frame-options')).toBe('DENY');
    expect(badPage.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const doc = (await stack.api('GET', '/openapi.json', undefined)).body;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/unsubscribe/{token}', '/v1/pacing', '/v1/pacing/announcements']));
  });
});
