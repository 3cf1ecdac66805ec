// Open and click tracking end to end, on SQLite and on PostgreSQL: a domain's tracking turned on with
// the real `resend` SDK (domains.update), its tracking CNAME published in the loopback DNS server and
// verified, mail sent through the real gateway to a loopback MX where its links point at the tracking
// host and DKIM still verifies; then the pixel and a link fetched over HTTP with the tracking host in
// Host: a 302 to the original URL, the events in GET /v1/emails/:id, email.opened and email.clicked at
// a loopback webhook receiver, and the analytics. Tampered, truncated, foreign and open-redirect links
// are 404s.
import crypto from 'node:crypto';
import http from 'node:http';
import { simpleParser } from 'mailparser';
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import nodemailer from 'nodemailer';
import { Resend } from 'resend';
import { grpcClient, unary } from '../../../proto/grpc.js';
import { GetEmailRequestSchema, PostgateService, SendEmailRequestSchema } from '../../../proto/gen/postgate/v1/public_pb.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../helpers/cluster.js';
import { type DnsServer, startDnsServer } from '../../helpers/dns-server.js';
import { messageIdOf, type MxSink, startMxSink } from '../../helpers/mx-sink.js';
import { type Project, Stack, sleep } from '../../helpers/stack.js';
import { authResults, publishDomain } from '../deliverability/helpers.js';

const CHROME = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';
const HOST = 'links.acme.test';
const SHOP = 'https://shop.example/p?a=1&b=2#top';
const HTML = `<html><body><p>Hi <a href="https://shop.example/p?a=1&amp;b=2#top">the shop</a>, <a href="mailto:help@acme.test">mail us</a>, <a href="#faq">FAQ</a>, <a href='http://blog.example/post'>blog</a>.</p></body></html>`;
const TEXT = 'Hi, the shop: https://shop.example/p?a=1&b=2#top';

/** A GET (or HEAD) to control's public listener as a browser sends it to the tracking host. */
function fetchTracked(stack: Stack, path: string, o: { host?: string; method?: string; ua?: string } = {}) {
  const port = Number(new URL(stack.url).port);
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, method: o.method ?? 'GET', headers: { host: o.host ?? HOST, 'user-agent': o.ua ?? CHROME } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`open and click tracking (${backend})`, () => {
    let dns: DnsServer;
    let sink: MxSink;
    let stack: Stack;
    let p: Project;
    let other: Project;
    let db: TestDatabase | undefined;
    let hooks: http.Server;
    let resend: Resend;
    let domainId: string;
    const webhooks: any[] = [];

    const received = async (id: string) => {
      const until = Date.now() + 20_000;
      while (Date.now() < until) {
        const m = sink.messages.filter((x) => messageIdOf(x) === id);
        if (m.length) return m;
        await sleep(100);
      }
      throw new Error(`email ${id} never reached the receiving server`);
    };
    const hrefs = (html: string) => [...html.matchAll(/(?:href|src)=(["'])(.*?)\1/g)].map((m) => m[2]!.replace(/&amp;/g, '&'));

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
      const env: Record<string, string> = {
        POSTGATE_DNS_SERVERS: dns.address,
        POSTGATE_DELIVERY_PORT: String(sink.port),
        POSTGATE_SENDING_IPS: '127.0.0.1',
        POSTGATE_TRACKING_HOST: 'track.postgate.test',
        POSTGATE_TRACKING_HTTPS: 'false',
        POSTGATE_TEST_CLOCK: '1',
      };
      if (backend === 'postgres') {
        db = await createTestDatabase('pg_tracking');
        env.POSTGATE_DATABASE_URL = db.url;
        env.POSTGATE_SECRET = crypto.randomBytes(32).toString('hex');
      }
      stack = await Stack.start({ env, config: { webhooks: { retryDelays: [1], maxAgeSeconds: 3600, timeoutMs: 2000, allowCidrs: ['127.0.0.0/8'] } } });
      p = await stack.createProject('tracked');
      await stack.setPlan('tracked', 'scale', { rate: 100000 });
      other = await stack.createProject('elsewhere');
      domainId = (await publishDomain(stack, p.keys.live, dns, 'acme.test')).id;
      await stack.verifyDomain('elsewhere', 'other.test');
      process.env.RESEND_BASE_URL = `${stack.url}/v1`;
      resend = new Resend(p.keys.live);
    }, 120_000);
    afterAll(async () => {
      delete process.env.RESEND_BASE_URL;
      await stack?.stop();
      await db?.drop();
      await sink?.close();
      await dns?.close();
      hooks?.close();
    });

    it('domains.update turns tracking on: a tracking CNAME joins the records, verify checks it, sending stays verified', async () => {
      const before = await resend.domains.get(domainId);
      expect(before.data).toMatchObject({ open_tracking: false, click_tracking: false });
      expect((before.data!.records as any[]).some((r) => r.purpose === 'tracking')).toBe(false);
      const { error } = await resend.domains.update({ id: domainId, openTracking: true, clickTracking: true });
      expect(error).toBeNull();
      const after = (await stack.api('GET', `/v1/domains/${domainId}`, p.keys.live)).body;
      expect(after).toMatchObject({ open_tracking: true, click_tracking: true, status: 'verified' });
      const cname = after.records.find((r: any) => r.purpose === 'tracking');
      expect(cname).toMatchObject({ type: 'CNAME', name: HOST, value: 'track.postgate.test', status: 'pending' });
      // Not published yet: the check says why; published: verified.
      let checked = (await stack.api('POST', `/v1/domains/${domainId}/verify`, p.keys.live)).body;
      expect(checked.records.find((r: any) => r.purpose === 'tracking')).toMatchObject({ status: 'failed' });
      expect(checked.status).toBe('verified');
      dns.add({ type: 'CNAME', name: HOST, target: 'track.postgate.test' });
      checked = (await stack.api('POST', `/v1/domains/${domainId}/verify`, p.keys.live)).body;
      expect(checked.records.find((r: any) => r.purpose === 'tracking')).toMatchObject({ status: 'verified' });
      const hook = await resend.webhooks.create({
        endpoint: `http://127.0.0.1:${(hooks.address() as { port: number }).port}/h`,
        events: ['email.opened', 'email.clicked'],
      });
      expect(hook.error).toBeNull();
    });

    let emailId: string;
    let click: string;
    let pixel: string;

    it('the received message has its http(s) links through the tracking host and the pixel; mailto, anchors and the text part stay; DKIM passes', async () => {
      const { data, error } = await resend.emails.send({ from: 'Acme <hello@acme.test>', to: 'ann@inbox.test', subject: 'Tracked', html: HTML, text: TEXT });
      expect(error).toBeNull();
      emailId = data!.id;
      const [got] = await received(emailId);
      const auth = await authResults(got!.raw, got!.mailFrom, dns);
      expect(auth).toMatchObject({ dkim: ['pass'], dkimDomain: 'acme.test', dmarc: 'pass' });
      const parsed = await simpleParser(got!.raw);
      expect(parsed.text?.trim()).toBe(TEXT);
      const links = hrefs(parsed.html as string);
      expect(links).toContain('mailto:help@acme.test');
      expect(links).toContain('#faq');
      const tracked = links.filter((l) => l.startsWith(`http://${HOST}/`));
      expect(tracked).toHaveLength(3); // two links and the pixel
      click = new URL(tracked[0]!).pathname;
      pixel = new URL(tracked.find((l) => l.endsWith('.gif'))!).pathname;
      expect(click.startsWith(`/c/${emailId}/`)).toBe(true);
      // The recipient's address is nowhere in a tracking URL.
      for (const l of tracked) expect(decodeURIComponent(l) + Buffer.from(l.split('/').at(-1)!, 'base64url').toString()).not.toContain('ann@inbox.test');
      // What the sender sent is what the API shows.
      const shown = await resend.emails.get(emailId);
      expect(shown.data?.html).toBe(HTML);
    });

    it('the pixel answers a GIF and a link 302s to the original URL exactly; the hits become events, a summary, webhooks and analytics', async () => {
      // Past the seconds after sending in which a click is a scanner's.
      await stack.admin('POST', '/admin/v1/test/clock', { advance_ms: 60_000 });
      const gif = await fetchTracked(stack, pixel);
      expect(gif.status).toBe(200);
      expect(gif.headers['content-type']).toBe('image/gif');
      expect(gif.headers['cache-control']).toContain('no-store');
      expect(gif.body.subarray(0, 6).toString()).toBe('GIF89a');
      const hit = await fetchTracked(stack, click);
      expect(hit.status).toBe(302);
      expect(hit.headers.location).toBe(SHOP);
      // A HEAD (a scanner checking the link) redirects too, and is counted as a machine.
      const head = await fetchTracked(stack, click, { method: 'HEAD' });
      expect([head.status, head.headers.location]).toEqual([302, SHOP]);
      const view = await stack.waitEmail(p.keys.live, emailId, (e) => e.tracking?.clicks?.count === 2 && e.tracking?.opens?.count === 1);
      expect(view.last_event).toBe('clicked');
      expect(view.tracking.opens).toMatchObject({ count: 1, bots: 0, first_at: expect.any(String) });
      expect(view.tracking.clicks.links).toEqual([{ link: SHOP, count: 2, bots: 1, first_at: expect.any(String), last_at: expect.any(String) }]);
      const clicked = view.events.filter((e: any) => e.type === 'clicked');
      expect(clicked).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ link: SHOP, bot: false, ip: '127.0.0.0/24', user_agent: CHROME }),
          expect.objectContaining({ link: SHOP, bot: true, bot_reason: 'HEAD request' }),
        ]),
      );
      // Never the whole address.
      expect(JSON.stringify(view)).not.toContain('127.0.0.1');
      const until = Date.now() + 15_000;
      // Both clicks' messages are sent, in either order (the HEAD's may arrive first): wait for the person's.
      const personClick = () => webhooks.some((w) => w.type === 'email.clicked' && w.data.click.bot === false);
      while (Date.now() < until && !(webhooks.some((w) => w.type === 'email.opened') && personClick())) await sleep(100);
      const wClick = webhooks.find((w) => w.type === 'email.clicked' && w.data.click.bot === false);
      expect(wClick.data).toMatchObject({ email_id: emailId, to: ['ann@inbox.test'], click: { link: SHOP, userAgent: CHROME, ipAddress: '127.0.0.0/24' } });
      expect(webhooks.find((w) => w.type === 'email.opened').data).toMatchObject({ email_id: emailId, open: { ipAddress: '127.0.0.0/24' } });
      expect(webhooks.every((w) => w.type === 'email.opened' || w.type === 'email.clicked')).toBe(true);
      const overview = (await stack.api('GET', '/v1/analytics/overview', p.keys.live)).body;
      expect(overview.month).toMatchObject({ opened: 1, clicked: 1 });
    });

    it('tampered, truncated, foreign-host, open-redirect and other-project links are 404s with no Location', async () => {
      const [, , id, t, mac, enc] = click.split('/');
      const evil = Buffer.from('https://evil.example/', 'utf8').toString('base64url');
      const flipped = (mac![0] === 'A' ? 'B' : 'A') + mac!.slice(1);
      const foreign = (await stack.api('POST', '/v1/emails', other.keys.live, { from: 'x@other.test', to: 'bob@inbox.test', subject: 's', text: 't' })).body.id;
      const attempts: Array<[string, string]> = [
        [`/c/${id}/${t}/${mac}/${evil}`, HOST],
        [`/c/${id}/${t}/${flipped}/${enc}`, HOST],
        [click.slice(0, -3), HOST],
        [click.slice(0, click.lastIndexOf('/')), HOST],
        [`/c/${foreign}/${t}/${mac}/${enc}`, HOST],
        [`/o/${foreign}/${t}/${mac}.gif`, HOST],
        [click, 'links.other.test'],
        [pixel, 'links.other.test'],
        [click, new URL(stack.url).host],
        [`/c/${id}/${t}/${mac}/${enc}/..%2F..%2Fevil`, HOST],
        ['/c/https:%2F%2Fevil.example', HOST],
        [`/c/${'A'.repeat(4000)}`, HOST],
      ];
      for (const [path, host] of attempts) {
        const r = await fetchTracked(stack, path, { host });
        expect([path.slice(0, 80), host, r.status, r.headers.location]).toEqual([path.slice(0, 80), host, 404, undefined]);
      }
      // None of them was recorded.
      const view = (await stack.api('GET', `/v1/emails/${emailId}`, p.keys.live)).body;
      expect(view.tracking.clicks.count).toBe(2);
      const theirs = (await stack.api('GET', `/v1/emails/${foreign}`, other.keys.live)).body;
      expect(theirs.tracking).toMatchObject({ opens: { count: 0 }, clicks: { count: 0 } });
    });

    it('per email: tracking off for one email leaves its html as sent; opens off for a bulk batch email tracks its clicks only, in every copy', async () => {
      const off = await stack.api('POST', '/v1/emails', p.keys.live, {
        from: 'hello@acme.test',
        to: 'cy@inbox.test',
        subject: 'Untracked',
        html: HTML,
        tracking: { open: false, click: false },
      });
      expect(off.status).toBe(202);
      const [plain] = await received(off.body.id);
      const html = (await simpleParser(plain!.raw)).html as string;
      expect(hrefs(html).some((l) => l.includes(HOST))).toBe(false);
      expect(hrefs(html)).toContain(SHOP);
      // Clicks only, on a bulk email (a copy per recipient), through the batch endpoint.
      const batch = await stack.api('POST', '/v1/emails/batch', p.keys.live, [
        { from: 'hello@acme.test', to: ['d1@inbox.test', 'd2@inbox.test'], subject: 'Bulk', html: HTML, bulk: true, tracking: { open: false } },
      ]);
      expect(batch.status, JSON.stringify(batch.body)).toBe(202);
      const copies = await received(batch.body.data[0].id);
      while ((await received(batch.body.data[0].id)).length < 2) await sleep(100);
      for (const copy of sink.messages.filter((m) => messageIdOf(m) === batch.body.data[0].id)) {
        const links = hrefs((await simpleParser(copy.raw)).html as string);
        expect(links.filter((l) => l.startsWith(`http://${HOST}/c/`))).toHaveLength(2);
        expect(links.some((l) => l.endsWith('.gif'))).toBe(false);
        expect((await authResults(copy.raw, copy.mailFrom, dns)).dkim).toEqual(['pass']);
      }
      expect(copies.length).toBeGreaterThan(0);
      const bad = await stack.api('POST', '/v1/emails', p.keys.live, {
        from: 'hello@acme.test',
        to: 'e@inbox.test',
        subject: 's',
        text: 't',
        tracking: { open: 'yes' },
      });
      expect([bad.status, bad.body.code]).toEqual([400, 'INVALID_REQUEST']);
    });

    it('over SMTP (X-Postgate-Tracking, removed from the message) and gRPC (tracking) too; GetEmail shows the counts', async () => {
      const t = nodemailer.createTransport({
        host: '127.0.0.1',
        port: Number(stack.env.POSTGATE_SMTP_PORT),
        auth: { user: 'any', pass: p.keys.live },
        tls: { rejectUnauthorized: false },
      });
      const info = await t.sendMail({
        from: 'hello@acme.test',
        to: 'smtp@inbox.test',
        subject: 'Over SMTP',
        html: HTML,
        text: TEXT,
        headers: { 'X-Postgate-Tracking': 'open=false, click=true' },
      });
      t.close();
      const smtpId = /queued as ([0-9a-f-]{36})/.exec(info.response)![1]!;
      const [viaSmtp] = await received(smtpId);
      expect(viaSmtp!.raw.toString('latin1')).not.toMatch(/X-Postgate-Tracking/i);
      const smtpLinks = hrefs((await simpleParser(viaSmtp!.raw)).html as string);
      expect(smtpLinks.filter((l) => l.startsWith(`http://${HOST}/c/`))).toHaveLength(2);
      expect(smtpLinks.some((l) => l.endsWith('.gif'))).toBe(false);
      expect((await authResults(viaSmtp!.raw, viaSmtp!.mailFrom, dns)).dkim).toEqual(['pass']);

      const client = grpcClient(PostgateService, `127.0.0.1:${stack.env.POSTGATE_GRPC_PORT}`);
      const md = new grpc.Metadata();
      md.set('x-service-key', p.keys.live);
      try {
        const sent = await unary<{ id: string }>(
          client,
          'sendEmail',
          create(SendEmailRequestSchema, {
            from: 'hello@acme.test',
            to: ['grpc@inbox.test'],
            subject: 'Over gRPC',
            html: HTML,
            tracking: { open: true, click: false },
          }),
          md,
        );
        const [viaGrpc] = await received(sent.id);
        const grpcLinks = hrefs((await simpleParser(viaGrpc!.raw)).html as string);
        expect(grpcLinks).toContain(SHOP);
        const gif = grpcLinks.find((l) => l.endsWith('.gif'))!;
        expect(gif.startsWith(`http://${HOST}/o/${sent.id}/`)).toBe(true);
        expect((await fetchTracked(stack, new URL(gif).pathname)).status).toBe(200);
        await stack.waitEmail(p.keys.live, sent.id, (e) => e.tracking?.opens?.count === 1);
        const got = await unary<any>(client, 'getEmail', create(GetEmailRequestSchema, { id: sent.id }), md);
        expect(got.tracking.opens).toMatchObject({ count: 1, bots: 0 });
        expect(got.events.find((e: any) => e.type === 'opened')).toMatchObject({ ip: '127.0.0.0/24', bot: false, userAgent: CHROME });
      } finally {
        client.close();
      }
    });
  });
}
