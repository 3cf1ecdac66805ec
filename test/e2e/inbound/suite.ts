// Receiving mail end to end: nodemailer (and a plain SMTP dialogue) into the real gateway's inbound
// port on loopback, SPF/DKIM/DMARC judged against a DNS server on loopback that publishes the senders'
// records and a test DKIM key, the email.received webhook at a loopback receiver, and the received
// email read back through the real `resend` SDK with its attachments downloaded from their signed links.
// Run on SQLite (receiving.test.ts) and on PostgreSQL (receiving-postgres.test.ts).
import crypto from 'node:crypto';
import http from 'node:http';
import nodemailer from 'nodemailer';
import { Resend } from 'resend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../helpers/cluster.js';
import { verify } from '../../../control/webhooks/signature.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { Stack, type Project } from '../../helpers/stack.js';
import { smtpDialogue } from './smtp.js';

export function receivingSuite(backend: 'sqlite' | 'postgres'): void {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const MAX_BYTES = 300_000;
  const MAX_RCPTS = 3;
  const RATE = 10;

  let db: TestDatabase | undefined;
  let dns: DnsServer;
  let stack: Stack;
  let a: Project;
  let b: Project;
  let resendA: Resend;
  let resendB: Resend;
  let inboundPort: number;
  let hookSecret: string;
  let server: http.Server;
  const hooks: Array<{ headers: Record<string, string>; body: string; json: any }> = [];
  const dkim = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const dkimPrivate = dkim.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

  /** Mail from sender.test, signed with the key its DNS publishes, from 127.0.0.1 (its SPF). */
  const signedTransport = () =>
    nodemailer.createTransport({
      host: '127.0.0.1',
      port: inboundPort,
      secure: false,
      ignoreTLS: true,
      name: 'mx.sender.test',
      dkim: { domainName: 'sender.test', keySelector: 's1', privateKey: dkimPrivate },
    });

  /** The id the listener's 250 names ("2.0.0 received as <id>"). */
  const idOf = (response: string): string => {
    const id = /received as (\S+)/.exec(response)?.[1];
    if (!id) throw new Error(`no id in ${response}`);
    return id;
  };

  async function receivedBy(resend: Resend, id: string, timeoutMs = 20_000) {
    const until = Date.now() + timeoutMs;
    let last: unknown;
    while (Date.now() < until) {
      const r = await resend.emails.receiving.get(id).catch((err: unknown) => ({ data: null, error: err }));
      if (r.data) return r.data;
      last = r.error;
      await sleep(100);
    }
    throw new Error(`received email ${id} never shown: ${JSON.stringify(last)}`);
  }

  async function hookFor(id: string, timeoutMs = 15_000) {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      const hit = hooks.find((h) => h.json.data?.email_id === id);
      if (hit) return hit;
      await sleep(50);
    }
    throw new Error(`no email.received webhook for ${id}`);
  }

  /** Waits until the gateway has the receiving domain (control pushes it after the change). */
  async function waitReceiving(address: string): Promise<void> {
    const until = Date.now() + 15_000;
    while (Date.now() < until) {
      const r = await smtpDialogue(inboundPort, { mailFrom: 'probe@sender.test', rcpts: [address] }).catch(() => undefined);
      if (r?.rcpts[0]?.startsWith('250')) return;
      await sleep(100);
    }
    throw new Error(`${address} never accepted`);
  }

  async function receivingDomain(p: Project, slug: string, name: string, receiving: boolean): Promise<void> {
    await stack.verifyDomain(slug, name);
    const list = await stack.api('GET', '/v1/domains', p.keys.live);
    const d = list.body.data.find((x: { name: string }) => x.name === name);
    if (!receiving) return;
    const r = await stack.api('PATCH', `/v1/domains/${d.id}`, p.keys.live, { capabilities: { receiving: 'enabled' } });
    expect(r.status).toBe(200);
    expect(r.body.records).toContainEqual(expect.objectContaining({ purpose: 'inbound_mx', type: 'MX', name, priority: 10 }));
  }

  beforeAll(async () => {
    if (backend === 'postgres') db = await createTestDatabase('pg_inbound');
    dns = await startDnsServer([
      { type: 'TXT', name: 'sender.test', value: 'v=spf1 ip4:127.0.0.1 -all' },
      {
        type: 'TXT',
        name: 's1._domainkey.sender.test',
        value: `v=DKIM1; k=rsa; p=${dkim.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`,
      },
      { type: 'TXT', name: '_dmarc.sender.test', value: 'v=DMARC1; p=reject' },
      // A bank whose mail never comes from 127.0.0.1 and is never unsigned.
      { type: 'TXT', name: 'bank.test', value: 'v=spf1 ip4:192.0.2.1 -all' },
      { type: 'TXT', name: '_dmarc.bank.test', value: 'v=DMARC1; p=reject' },
      { type: 'TXT', name: 'evil.test', value: 'v=spf1 -all' },
    ]);
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        hooks.push({ headers: req.headers as Record<string, string>, body, json: JSON.parse(body) });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    stack = await Stack.start({
      env: {
        POSTGATE_DNS_SERVERS: dns.address,
        POSTGATE_INBOUND_MAX_BYTES: String(MAX_BYTES),
        POSTGATE_INBOUND_MAX_RECIPIENTS: String(MAX_RCPTS),
        POSTGATE_INBOUND_RATE_PER_MINUTE: String(RATE),
        ...(db ? { POSTGATE_DATABASE_URL: db.url, POSTGATE_SECRET: crypto.randomBytes(32).toString('hex') } : {}),
      },
      config: { webhooks: { retryDelays: [1], maxAgeSeconds: 3600, timeoutMs: 2000, allowCidrs: ['127.0.0.0/8'] } },
    });
    inboundPort = Number(stack.env.POSTGATE_INBOUND_PORT);
    a = await stack.createProject('inbound-a');
    b = await stack.createProject('inbound-b');
    await receivingDomain(a, 'inbound-a', 'acme.test', true);
    await receivingDomain(a, 'inbound-a', 'busy.test', true);
    await receivingDomain(a, 'inbound-a', 'quiet.test', false);
    await receivingDomain(b, 'inbound-b', 'other.test', true);
    process.env.RESEND_BASE_URL = `${stack.url}/v1`;
    resendA = new Resend(a.keys.live);
    resendB = new Resend(b.keys.live);
    const hook = await resendA.webhooks.create({ endpoint: `http://127.0.0.1:${(server.address() as { port: number }).port}/in`, events: ['email.received'] });
    expect(hook.error).toBeNull();
    hookSecret = hook.data!.signing_secret;
    await waitReceiving('probe@acme.test');
    await waitReceiving('probe@other.test');
  });
  afterAll(async () => {
    delete process.env.RESEND_BASE_URL;
    await stack?.stop();
    server?.close();
    await dns?.close();
    await db?.drop();
  });

  describe(`receiving mail (${backend})`, () => {
    let id: string;

    it('takes signed mail for any address at a receiving domain: stored, webhook sent, read through the resend SDK', async () => {
      const pdf = Buffer.from([0x25, 0x50, 0x44, 0x46, ...Array.from({ length: 3000 }, (_, i) => (i * 13) % 256)]);
      const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
      const info = await signedTransport().sendMail({
        envelope: { from: 'ann@sender.test', to: ['support@acme.test'] },
        from: 'Ann Sender <ann@sender.test>',
        to: 'Support <support@acme.test>',
        cc: 'sales@acme.test',
        subject: 'Invoice 42',
        text: 'Please find the invoice attached.',
        html: '<p>Please find the <b>invoice</b> attached. <img src="cid:logo@sender.test"></p>',
        headers: { 'X-Ticket': 'T-7' },
        attachments: [
          { filename: 'invoice.pdf', content: pdf, contentType: 'application/pdf' },
          { filename: 'logo.png', content: png, contentType: 'image/png', cid: 'logo@sender.test' },
        ],
      });
      expect(info.response).toMatch(/^250 /);
      id = idOf(info.response);

      const got = await receivedBy(resendA, id);
      expect(got).toMatchObject({
        object: 'email',
        id,
        from: 'Ann Sender <ann@sender.test>',
        to: ['Support <support@acme.test>'],
        cc: ['sales@acme.test'],
        received_for: ['support@acme.test'],
        subject: 'Invoice 42',
        message_id: info.messageId,
      });
      expect(got.text?.trim()).toBe('Please find the invoice attached.');
      expect(got.html).toContain('<b>invoice</b>');
      // As Resend: inline images as data: URIs by default, the cid: references with html_format cid.
      expect(got.html).toContain(`<img src="data:image/png;base64,${png.toString('base64')}">`);
      const cid = await resendA.emails.receiving.get(id, { html_format: 'cid' });
      expect(cid.data?.html).toContain('<img src="cid:logo@sender.test">');
      expect(got.headers?.['x-ticket']).toBe('T-7');
      expect(got.headers?.['dkim-signature']).toContain('d=sender.test');
      expect((got as any).authentication).toMatchObject({ spf: 'pass', dkim: 'pass', dmarc: 'pass' });
      expect(got.attachments).toHaveLength(2);
      expect(got.attachments).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ filename: 'invoice.pdf', size: pdf.length, content_type: 'application/pdf', content_disposition: 'attachment' }),
          expect.objectContaining({ filename: 'logo.png', content_type: 'image/png', content_id: 'logo@sender.test', content_disposition: 'inline' }),
        ]),
      );

      // The webhook, signed, in Resend's shape.
      const hook = await hookFor(id);
      expect(hook.json).toMatchObject({
        type: 'email.received',
        data: { email_id: id, from: 'Ann Sender <ann@sender.test>', received_for: ['support@acme.test'], subject: 'Invoice 42', message_id: info.messageId },
      });
      expect(hook.json.data.attachments.map((x: { filename: string }) => x.filename).sort()).toEqual(['invoice.pdf', 'logo.png']);
      expect(verify(hookSecret, hook.headers, hook.body)).toBe(true);

      // The list, newest first.
      const list = await resendA.emails.receiving.list();
      expect(list.error).toBeNull();
      expect(list.data!.data[0]).toMatchObject({ id, subject: 'Invoice 42' });
      expect(list.data!.data[0]).not.toHaveProperty('html');

      // Attachments through the SDK, downloaded from their signed links (no key).
      const atts = await resendA.emails.receiving.attachments.list({ emailId: id });
      expect(atts.error).toBeNull();
      expect(atts.data!.data).toHaveLength(2);
      const pdfId = atts.data!.data.find((x) => x.filename === 'invoice.pdf')!.id;
      const one = await resendA.emails.receiving.attachments.get({ emailId: id, id: pdfId });
      expect(one.data).toMatchObject({ object: 'attachment', filename: 'invoice.pdf', content_type: 'application/pdf' });
      expect(Date.parse(one.data!.expires_at) - Date.now()).toBeGreaterThan(50 * 60_000);
      const file = await fetch(one.data!.download_url);
      expect(file.status).toBe(200);
      expect(Buffer.from(await file.arrayBuffer()).equals(pdf)).toBe(true);
      expect(file.headers.get('content-type')).toBe('application/octet-stream');
      expect(file.headers.get('content-disposition')).toContain('attachment; filename="invoice.pdf"');

      // The message as received.
      const raw = await fetch((got.raw as { download_url: string }).download_url);
      expect(raw.status).toBe(200);
      expect(await raw.text()).toContain('Subject: Invoice 42');
    });

    it("forwards through the SDK's emails.receiving.forward (it reads the raw message from its signed link, then sends)", async () => {
      const passthrough = await resendA.emails.receiving.forward({ emailId: id, from: 'Desk <desk@acme.test>', to: 'boss@inbox.test' });
      expect(passthrough.error).toBeNull();
      const sent = await stack.api('GET', `/v1/emails/${passthrough.data!.id}`, a.keys.live);
      expect(sent.body).toMatchObject({ subject: 'Invoice 42', from: 'Desk <desk@acme.test>', to: ['boss@inbox.test'] });
      const wrapped = await resendA.emails.receiving.forward({ emailId: id, from: 'desk@acme.test', to: 'boss@inbox.test', passthrough: false, text: 'FYI' });
      expect(wrapped.error).toBeNull();
      expect((await stack.api('GET', `/v1/emails/${wrapped.data!.id}`, a.keys.live)).body).toMatchObject({ subject: 'Fwd: Invoice 42', text: 'FYI' });
    });

    it('a tampered, foreign or keyless download link is a 404', async () => {
      const atts = await resendA.emails.receiving.attachments.list({ emailId: id });
      const url = new URL(atts.data!.data[0]!.download_url);
      const tampered = new URL(url);
      tampered.searchParams.set('signature', `${url.searchParams.get('signature')!.slice(0, -2)}AA`);
      expect((await fetch(tampered)).status).toBe(404);
      const longer = new URL(url);
      longer.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 3600));
      expect((await fetch(longer)).status).toBe(404);
      const foreign = new URL(url);
      foreign.searchParams.set('project', b.id);
      expect((await fetch(foreign)).status).toBe(404);
      const other = new URL(url.toString().replace(atts.data!.data[0]!.id, atts.data!.data[1]!.id));
      expect((await fetch(other)).status).toBe(404);
      const bare = new URL(url);
      bare.search = '';
      expect((await fetch(bare)).status).toBe(404);
    });

    it("another project's received email is a 404, and its list does not show it", async () => {
      const r = await resendB.emails.receiving.get(id);
      expect(r.data).toBeNull();
      expect(r.error).toMatchObject({ statusCode: 404 });
      expect((await stack.api('GET', `/v1/emails/receiving/${id}/attachments`, b.keys.live)).status).toBe(404);
      const atts = await resendA.emails.receiving.attachments.list({ emailId: id });
      expect((await stack.api('GET', `/v1/emails/receiving/${id}/attachments/${atts.data!.data[0]!.id}`, b.keys.live)).status).toBe(404);
      // B's own mail is B's.
      const info = await signedTransport().sendMail({ from: 'ann@sender.test', to: 'desk@other.test', subject: 'For B', text: 'b' });
      const bid = idOf(info.response);
      expect((await receivedBy(resendB, bid)).subject).toBe('For B');
      expect((await resendA.emails.receiving.get(bid)).error).toMatchObject({ statusCode: 404 });
      expect((await resendB.emails.receiving.list()).data!.data.map((e) => e.id)).toEqual([bid]);
    });

    it('refuses at RCPT an address nobody routes: a domain without receiving, an unknown domain (550 5.1.1)', async () => {
      const r = await smtpDialogue(inboundPort, { mailFrom: 'ann@sender.test', rcpts: ['x@quiet.test', 'x@nowhere.test', 'x@acme.test.evil.test'] });
      for (const answer of r.rcpts) expect(answer).toMatch(/^550 5\.1\.1/);
    });

    it('refuses a message over the size limit after DATA (5.3.4), and one announcing it in MAIL SIZE', async () => {
      const big = `From: ann@sender.test\r\nTo: x@acme.test\r\nSubject: big\r\n\r\n${'y'
        .repeat(76)
        .concat('\r\n')
        .repeat(Math.ceil((MAX_BYTES + 10_000) / 78))}`;
      const r = await smtpDialogue(inboundPort, { mailFrom: 'ann@sender.test', rcpts: ['x@acme.test'], data: big });
      expect(r.rcpts[0]).toMatch(/^250/);
      expect(r.end).toMatch(/^550 5\.3\.4/);
      const list = await resendA.emails.receiving.list();
      expect(list.data!.data.some((e) => e.subject === 'big')).toBe(false);
    });

    it('takes at most the configured recipients per message (4.5.3 past them); the others get the message', async () => {
      const rcpts = ['r1@acme.test', 'r2@acme.test', 'r3@acme.test', 'r4@acme.test'];
      const r = await smtpDialogue(inboundPort, {
        mailFrom: 'ann@sender.test',
        rcpts,
        data: 'From: ann@sender.test\r\nTo: team@acme.test\r\nSubject: many\r\nMessage-ID: <many@sender.test>\r\n\r\nhello',
      });
      expect(r.rcpts.slice(0, MAX_RCPTS).every((x) => x.startsWith('250'))).toBe(true);
      expect(r.rcpts[MAX_RCPTS]).toMatch(/^452 4\.5\.3/);
      const got = await receivedBy(resendA, idOf(r.end!));
      expect(got.received_for).toEqual(rcpts.slice(0, MAX_RCPTS));
    });

    it('a domain takes at most its rate per minute (451 4.7.1 past it)', async () => {
      for (let i = 0; i < RATE; i++) {
        const r = await smtpDialogue(inboundPort, { mailFrom: 'ann@sender.test', rcpts: ['in@busy.test'], data: `Subject: n${i}\r\n\r\nx` });
        expect(r.end).toMatch(/^250/);
      }
      const r = await smtpDialogue(inboundPort, { mailFrom: 'ann@sender.test', rcpts: ['in@busy.test', 'x@acme.test'] });
      expect(r.rcpts[0]).toMatch(/^451 4\.7\.1/);
      // Another domain is not held by it.
      expect(r.rcpts[1]).toMatch(/^250/);
    });

    it('a forged From failing DMARC is stored with its failing results, not trusted', async () => {
      const r = await smtpDialogue(inboundPort, {
        mailFrom: 'attacker@evil.test',
        rcpts: ['billing@acme.test'],
        data: 'From: CEO <ceo@bank.test>\r\nTo: billing@acme.test\r\nSubject: Wire the money\r\nMessage-ID: <forged@evil.test>\r\n\r\nNow.',
      });
      expect(r.end).toMatch(/^250/);
      const got: any = await receivedBy(resendA, idOf(r.end!));
      expect(got.from).toBe('CEO <ceo@bank.test>');
      expect(got.authentication).toMatchObject({ spf: 'fail', dkim: 'none', dmarc: 'fail' });
      expect(got.authentication.details.dmarc).toMatchObject({ domain: 'bank.test', policy: 'reject' });
      expect(got.authentication.results).toContain('dmarc=fail');
      const hook = await hookFor(got.id);
      expect(hook.json.data.authentication).toMatchObject({ dmarc: 'fail' });
    });

    it('weird file names and header tricks: names kept as names only, files served as downloads whatever their type', async () => {
      const html = '<script>alert(document.cookie)</script>';
      const data = [
        'From: ann@sender.test',
        'To: x@acme.test',
        `Subject: =?UTF-8?B?${Buffer.from('Hi\r\nBcc: victim@example.com').toString('base64')}?=`,
        'MIME-Version: 1.0',
        'Content-Type: multipart/mixed; boundary="b1"',
        '',
        '--b1',
        'Content-Type: text/plain',
        '',
        'see files',
        '--b1',
        'Content-Type: text/html',
        `Content-Disposition: attachment; filename*=UTF-8''..%2F..%2Fetc%2Fpasswd%0D%0ASet-Cookie%3A%20a%3Db.html`,
        '',
        html,
        '--b1',
        'Content-Type: application/octet-stream',
        'Content-Disposition: attachment; filename="..\\\\..\\\\win.ini"',
        '',
        'x',
        '--b1',
        'Content-Type: application/octet-stream',
        'Content-Disposition: attachment; filename="quo\\"te\u00e9.txt"',
        '',
        'q',
        '--b1--',
      ].join('\r\n');
      const r = await smtpDialogue(inboundPort, { mailFrom: 'ann@sender.test', rcpts: ['x@acme.test'], data });
      expect(r.end).toMatch(/^250/);
      const rid = idOf(r.end!);
      const got = await receivedBy(resendA, rid);
      expect(got.subject).toBe('Hi\r\nBcc: victim@example.com');
      expect(got.bcc).toBeNull();
      const names = got.attachments.map((x) => x.filename);
      expect(names[0]).toBe('passwdSet-Cookie: a=b.html');
      expect(names[1]).toBe('win.ini');
      for (const n of names) expect(n).not.toMatch(/[/\\\r\n]/);
      const atts = await resendA.emails.receiving.attachments.list({ emailId: rid });
      for (const att of atts.data!.data) {
        const file = await fetch(att.download_url);
        expect(file.status).toBe(200);
        expect(file.headers.get('content-type')).toBe('application/octet-stream');
        expect(file.headers.get('x-content-type-options')).toBe('nosniff');
        expect(file.headers.get('content-security-policy')).toContain('sandbox');
        expect(file.headers.get('set-cookie')).toBeNull();
        expect(file.headers.get('content-disposition')).toMatch(/^attachment; filename="[\x20-\x7e]*"; filename\*=UTF-8''/);
      }
      expect(await (await fetch(atts.data!.data[0]!.download_url)).text()).toBe(html);
    });

    it('turning receiving off takes the MX record away and refuses at RCPT again (pushed at once)', async () => {
      const d = (await stack.api('GET', '/v1/domains', a.keys.live)).body.data.find((x: { name: string }) => x.name === 'busy.test');
      const r = await stack.api('PATCH', `/v1/domains/${d.id}`, a.keys.live, { capabilities: { receiving: 'disabled' } });
      expect(r.status).toBe(200);
      expect(r.body.capabilities.receiving).toBe('disabled');
      expect(r.body.records.map((x: { purpose: string }) => x.purpose)).not.toContain('inbound_mx');
      await expect
        .poll(async () => (await smtpDialogue(inboundPort, { mailFrom: 'ann@sender.test', rcpts: ['in@busy.test'] })).rcpts[0], { timeout: 10_000 })
        .toMatch(/^550 5\.1\.1/);
    });

    it('pages the list with after and before', async () => {
      const first = await resendA.emails.receiving.list({ limit: 2 });
      expect(first.data!.has_more).toBe(true);
      const next = await resendA.emails.receiving.list({ limit: 2, after: first.data!.data[1]!.id });
      expect(next.data!.data.map((e) => e.id)).not.toContain(first.data!.data[0]!.id);
      const back = await resendA.emails.receiving.list({ limit: 2, before: next.data!.data[0]!.id });
      expect(back.data!.data.map((e) => e.id)).toEqual(first.data!.data.map((e) => e.id));
      const bad = await stack.api('GET', '/v1/emails/receiving?after=nope', a.keys.live);
      expect(bad.status).toBe(400);
      expect(bad.body.error).toContain('after names no received email');
    });

    it('nothing accepted is lost: control killed -9 right after the 250 stores it on restart', async () => {
      const r = await smtpDialogue(inboundPort, { mailFrom: 'ann@sender.test', rcpts: ['late@acme.test'], data: 'Subject: while control died\r\n\r\nx' });
      const old = stack.kill('control');
      expect(r.end).toMatch(/^250/);
      // Mail keeps coming while control is away: the gateway takes it on its own.
      const r2 = await smtpDialogue(inboundPort, { mailFrom: 'ann@sender.test', rcpts: ['later@acme.test'], data: 'Subject: while control was away\r\n\r\nx' });
      expect(r2.end).toMatch(/^250/);
      await stack.waitRestart('control', old);
      expect((await receivedBy(resendA, idOf(r.end!))).subject).toBe('while control died');
      expect((await receivedBy(resendA, idOf(r2.end!))).subject).toBe('while control was away');
    });

    it('nothing accepted is lost: the gateway killed -9 right after the 250 hands it over on restart', async () => {
      // Control frozen, so the message can only be in the gateway's outbox when the gateway dies.
      stack.kill('control', 'SIGSTOP');
      let gid = '';
      try {
        const r = await smtpDialogue(inboundPort, { mailFrom: 'ann@sender.test', rcpts: ['gw@acme.test'], data: 'Subject: while the gateway died\r\n\r\nx' });
        const old = stack.kill('gateway');
        expect(r.end).toMatch(/^250/);
        gid = idOf(r.end!);
        await stack.waitRestart('gateway', old);
        // The restarted gateway knows the receiving domains (kept on disk) while control, frozen, cannot push them.
        await waitReceiving('again@acme.test');
      } finally {
        stack.kill('control', 'SIGCONT');
      }
      expect((await receivedBy(resendA, gid, 30_000)).subject).toBe('while the gateway died');
    });
  });
}
