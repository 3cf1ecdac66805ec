// SMTP submission against the real stack, with nodemailer as the client: AUTH
// with an API key, STARTTLS with the self-signed pair, the message mapped to a
// send request and judged by the same pipeline as POST /v1/emails, refusals as
// SMTP replies carrying the API's code, and the per-project rate (451 4.7.1).
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import nodemailer from 'nodemailer';
import type { SendMailOptions } from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import type SMTPPool from 'nodemailer/lib/smtp-pool';
import { Stack, sleep, type Project } from '../../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, type MxSink } from '../../helpers/mx-sink.js';

const RATE = 20; // smtpRate for this stack: low enough to exceed in a test
const PER_IP = 8; // smtpConnectionsPerIp: above the largest pool below

let stack: Stack;
let dns: DnsServer;
let sink: MxSink;
let acme: Project;
let smtpPort: number;

type Options = SMTPTransport.Options;

function transport(pass: string, opts: Options = {}) {
  return nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, auth: { user: 'anything', pass }, tls: { rejectUnauthorized: false }, ...opts });
}

/** Pooled connections, each carrying several messages. */
function pool(pass: string, maxConnections: number) {
  const opts: SMTPPool.Options = {
    pool: true,
    maxConnections,
    host: '127.0.0.1',
    port: smtpPort,
    auth: { user: 'anything', pass },
    tls: { rejectUnauthorized: false },
  };
  return nodemailer.createTransport(opts);
}

/** The email id from `250 2.0.0 Ok: queued as <id>`. */
const idOf = (response: string) => /queued as ([0-9a-f-]{36})$/.exec(response)?.[1];

/** Sends and returns the SMTP error (with responseCode and response), failing the test if it was accepted. */
async function refusal(pass: string, mail: SendMailOptions, opts: Options = {}): Promise<{ responseCode: number; response: string; code?: string }> {
  const t = transport(pass, opts);
  try {
    const info = await t.sendMail(mail);
    throw new Error(`accepted: ${info.response}`);
  } catch (err) {
    const e = err as { responseCode?: number; response?: string; code?: string; message: string };
    if (e.responseCode === undefined) throw err;
    return { responseCode: e.responseCode, response: e.response ?? '', code: e.code };
  } finally {
    t.close();
  }
}

const base = { from: 'Acme <hello@acme.test>', to: 'bob@ok.test', subject: 'Hi', text: 'Hello' };

beforeAll(async () => {
  dns = await startDnsServer([
    { type: 'MX', name: 'ok.test', exchange: 'mx.ok.test', priority: 10 },
    { type: 'A', name: 'mx.ok.test', address: '127.0.0.1' },
  ]);
  sink = await startMxSink();
  stack = await Stack.start({
    env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port) },
    // Small body and attachment limits make the message size limit (derived from them) testable: 1,349,410 bytes.
    config: { smtpRate: RATE, smtpConnectionsPerIp: PER_IP, limits: { maxBodyBytes: 100_000, maxAttachments: 10, maxAttachmentBytes: 10_000 } },
  });
  smtpPort = Number(stack.env.POSTGATE_SMTP_PORT);
  acme = await stack.createProject('acme');
  await stack.cli('domain', 'verify', '--project', 'acme', '--name', 'acme.test', '--force');
});
afterAll(async () => {
  await stack?.stop();
  await sink?.close();
  await dns?.close();
});

describe('sessions per client address', () => {
  /** Connects and resolves the greeting line, leaving the session open. */
  const greet = () =>
    new Promise<{ sock: net.Socket; line: string }>((resolve, reject) => {
      const sock = net.connect(smtpPort, '127.0.0.1');
      sock.once('data', (d) => resolve({ sock, line: d.toString().split('\r\n')[0]! }));
      sock.on('error', reject);
    });

  it(`holds one address to ${PER_IP} sessions at once: the next is 421 4.7.0, and a freed place is taken again`, async () => {
    const open = [];
    for (let i = 0; i < PER_IP; i++) open.push(await greet());
    expect(open.every((o) => o.line.startsWith('220 '))).toBe(true);
    const refused = await greet();
    expect(refused.line).toMatch(/^421 4\.7\.0 Too many connections from your address/);
    refused.sock.destroy();
    open.pop()!.sock.destroy();
    await sleep(200);
    const again = await greet();
    expect(again.line).toMatch(/^220 /);
    for (const o of [...open, again]) o.sock.destroy();
    await sleep(200);
  });
});

describe('authentication and TLS', () => {
  it('offers STARTTLS and AUTH PLAIN LOGIN, and refuses MAIL before AUTH with 530', async () => {
    const lines = await rawSession(['EHLO client.test', 'MAIL FROM:<hello@acme.test>', 'QUIT']);
    expect(lines).toContain('250-STARTTLS');
    expect(lines.some((l) => /^250[- ]AUTH PLAIN LOGIN$/.test(l))).toBe(true);
    expect(lines.find((l) => l.startsWith('530'))).toBeDefined();
  });

  it('refuses an unknown MAIL FROM parameter with 555 5.5.4, and takes the ones it offers', async () => {
    const plain = Buffer.from(`\0anything\0${acme.keys.live}`).toString('base64');
    const lines = await rawSession([
      'EHLO client.test',
      `AUTH PLAIN ${plain}`,
      'MAIL FROM:<hello@acme.test> FOO=bar',
      'MAIL FROM:<hello@acme.test> SIZE=100 BODY=8BITMIME',
      'QUIT',
    ]);
    expect(lines.find((l) => l.startsWith('555'))).toMatch(/^555 5\.5\.4 MAIL FROM parameter FOO not recognized/);
    expect(lines.filter((l) => /^250 /.test(l)).length).toBeGreaterThanOrEqual(2);
  });

  it('AUTH PLAIN over STARTTLS with the self-signed pair generated into <data>/tls (0600)', async () => {
    const t = transport(acme.keys.live, { requireTLS: true, authMethod: 'PLAIN' });
    const info = await t.sendMail(base);
    t.close();
    expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as /);
    expect(idOf(info.response)).toBeDefined();
    for (const f of ['cert.pem', 'key.pem']) {
      expect(fs.statSync(path.join(stack.dataDir, 'tls', f)).mode & 0o777).toBe(0o600);
    }
    // The cert is not from a trusted CA: a client that checks it refuses.
    const strict = transport(acme.keys.live, { requireTLS: true, tls: { rejectUnauthorized: true } });
    await expect(strict.sendMail(base)).rejects.toThrow(/self[- ]signed|certificate/i);
    strict.close();
  });

  it('AUTH LOGIN in clear text on loopback', async () => {
    const t = transport(acme.keys.live, { ignoreTLS: true, authMethod: 'LOGIN' });
    const info = await t.sendMail(base);
    t.close();
    expect(idOf(info.response)).toBeDefined();
  });

  it('refuses a wrong, a test-kind and a revoked key with 535 5.7.8', async () => {
    for (const pass of ['pg_live_nope', acme.keys.test, `${acme.keys.live}x`]) {
      const r = await refusal(pass, base);
      expect(r.responseCode).toBe(535);
      expect(r.response).toMatch(/^535 5\.7\.8 INVALID_API_KEY/);
    }
    const created = JSON.parse(await stack.cli('key', 'create', '--project', 'acme', '--kind', 'live', '--json'));
    // A pooled connection authenticated before the revocation loses its key at the next MAIL.
    const pooled = pool(created.key, 1);
    expect(idOf((await pooled.sendMail(base)).response)).toBeDefined();
    await stack.cli('key', 'revoke', '--project', 'acme', '--id', created.id);
    await expect(pooled.sendMail(base)).rejects.toMatchObject({ responseCode: 535 });
    pooled.close();
  });
});

describe('the message goes through the pipeline of POST /v1/emails', () => {
  it('is stored with the same fields as the same email sent over HTTP, bcc from the envelope', async () => {
    const t = transport(acme.keys.live);
    const info = await t.sendMail({
      from: '"Acme, Inc." <hello@acme.test>',
      to: ['one@ok.test', 'Two Person <two@ok.test>'],
      cc: 'cc@ok.test',
      bcc: 'hidden@ok.test',
      replyTo: 'support@acme.test',
      subject: 'Всё хорошо',
      text: 'Hello',
      html: '<p>Hello</p>',
      headers: { 'X-Postgate-Tags': 'welcome, signup', 'X-Postgate-Bulk': 'true', 'X-Campaign': 'c1' },
    });
    t.close();
    const id = idOf(info.response)!;
    const viaSmtp = (await stack.api('GET', `/v1/emails/${id}`, acme.keys.live)).body;
    const http = await stack.api('POST', '/v1/emails', acme.keys.live, {
      from: '"Acme, Inc." <hello@acme.test>',
      to: ['one@ok.test', 'Two Person <two@ok.test>'],
      cc: ['cc@ok.test'],
      bcc: ['hidden@ok.test'],
      reply_to: 'support@acme.test',
      subject: 'Всё хорошо',
      text: 'Hello',
      html: '<p>Hello</p>',
      tags: ['welcome', 'signup'],
      bulk: true,
      headers: { 'X-Campaign': 'c1' },
    });
    expect(http.status).toBe(202);
    const viaHttp = (await stack.api('GET', `/v1/emails/${http.body.id}`, acme.keys.live)).body;
    const comparable = (e: any) => ({
      ...e,
      id: undefined,
      message_id: undefined,
      created_at: undefined,
      updated_at: undefined,
      recipients: e.recipients.map((r: any) => [r.email, r.kind]),
      events: e.events.slice(0, 1).map((x: any) => x.type),
      // Delivery goes on meanwhile: the one sent first may already be further along.
      status: undefined,
    });
    expect(comparable(viaSmtp)).toEqual(comparable(viaHttp));
    for (const e of [viaSmtp, viaHttp]) expect(['queued', 'sending', 'sent', 'delivered']).toContain(e.status);
    expect(viaSmtp).toMatchObject({ to: ['one@ok.test', 'Two Person <two@ok.test>'], bcc: ['hidden@ok.test'], tags: ['welcome', 'signup'], bulk: true });
  });

  it('is delivered with X-* headers passed on and the X-Postgate-* ones removed', async () => {
    const t = transport(acme.keys.live);
    const info = await t.sendMail({ ...base, to: 'deliver@ok.test', subject: 'Delivered', headers: { 'X-Postgate-Tags': 'x', 'X-Campaign': 'c2' } });
    t.close();
    const id = idOf(info.response)!;
    const email = await stack.waitEmail(acme.keys.live, id, (e) => e.status === 'sent' || e.status === 'delivered', 30_000);
    expect(email.tags).toEqual(['x']);
    const got = sink.messages.find((m) => m.raw.toString().includes(id));
    expect(got?.rcptTo).toEqual(['deliver@ok.test']);
    const raw = got!.raw.toString();
    expect(raw).toMatch(/^X-Campaign: c2\r?$/m);
    expect(raw).not.toMatch(/X-Postgate-/i);
  });

  it('takes envelope recipients not named in To/Cc as bcc, and refuses header recipients outside the envelope', async () => {
    const t = transport(acme.keys.live);
    const info = await t.sendMail({ ...base, to: 'a@ok.test', envelope: { from: 'hello@acme.test', to: ['a@ok.test', 'b@ok.test', 'c@ok.test'] } });
    const email = (await stack.api('GET', `/v1/emails/${idOf(info.response)}`, acme.keys.live)).body;
    expect(email.to).toEqual(['a@ok.test']);
    expect(email.bcc).toEqual(['b@ok.test', 'c@ok.test']);
    await expect(t.sendMail({ ...base, to: ['a@ok.test', 'x@ok.test'], envelope: { from: 'hello@acme.test', to: ['a@ok.test'] } })).rejects.toMatchObject({
      responseCode: 550,
      response: expect.stringMatching(/^550 5\.6\.0 INVALID_REQUEST: x@ok\.test is named in To\/Cc/),
    });
    t.close();
  });
});

describe('refusals carry the API code', () => {
  it('an invalid message: 550 5.6.0 INVALID_REQUEST', async () => {
    const cases: SendMailOptions[] = [
      { ...base, subject: undefined }, // no Subject
      { ...base, attachments: [{ filename: 'a.exe', content: 'x' }] }, // a refused type (attachments are kept otherwise)
      { ...base, headers: { 'X-Postgate-Bulk': 'maybe' } },
      { ...base, from: 'not-an-address' },
      { ...base, subject: 'x'.repeat(1200) },
    ];
    for (const mail of cases) {
      const r = await refusal(acme.keys.live, mail);
      expect(r.responseCode, JSON.stringify(mail)).toBe(550);
      expect(r.response).toMatch(/^550 5\.6\.0 INVALID_REQUEST: /);
    }
  });

  it('a From that names several mailboxes, a group, or comes twice: 550 5.6.0, nothing sent', async () => {
    const raw = (fromLines: string) => `${fromLines}\r\nTo: bob@ok.test\r\nSubject: Spoof\r\n\r\nHello\r\n`;
    const spoofs = [
      'From: ceo@bank.test, <hello@acme.test>',
      'From: undisclosed:ceo@bank.test; <hello@acme.test>',
      'From: undisclosed:; <hello@acme.test>',
      'From: ceo@bank.test\r\nFrom: hello@acme.test',
      'From: hello@acme.test\r\nFrom: ceo@bank.test',
    ];
    const before = sink.messages.length;
    for (const from of spoofs) {
      const r = await refusal(acme.keys.live, { envelope: { from: 'hello@acme.test', to: ['bob@ok.test'] }, raw: raw(from) });
      expect([from, r.responseCode]).toEqual([from, 550]);
      expect(r.response).toMatch(/^550 5\.6\.0 INVALID_REQUEST: From must name exactly one mailbox/);
    }
    await sleep(300);
    expect(sink.messages.slice(before).filter((m) => m.raw.toString().includes('Subject: Spoof'))).toEqual([]);
  });

  it('a message over the advertised SIZE: 552 5.3.4 PAYLOAD_TOO_LARGE', async () => {
    const r = await refusal(acme.keys.live, { ...base, text: 'x'.repeat(1_500_000) });
    expect(r.responseCode).toBe(552);
    expect(r.response).toMatch(/^552 5\.3\.4 PAYLOAD_TOO_LARGE: /);
  });

  it('a bad recipient address: 553 5.1.3', async () => {
    const r = await refusal(acme.keys.live, { ...base, to: 'bad@', envelope: { from: 'hello@acme.test', to: ['bad@nodot'] } });
    expect(r.responseCode).toBe(553);
    expect(r.response).toMatch(/^553 5\.1\.3 INVALID_REQUEST/);
  });

  it('an unverified sender domain: 550 5.7.1 DOMAIN_NOT_VERIFIED with the id of the failed email', async () => {
    const r = await refusal(acme.keys.live, { ...base, from: 'hello@unverified.test' });
    expect(r.responseCode).toBe(550);
    const m = /^550 5\.7\.1 DOMAIN_NOT_VERIFIED: .* \(id ([0-9a-f-]{36})\)$/.exec(r.response);
    expect(m, r.response).not.toBeNull();
    const email = (await stack.api('GET', `/v1/emails/${m![1]}`, acme.keys.live)).body;
    expect(email).toMatchObject({ status: 'failed', error: { code: 'DOMAIN_NOT_VERIFIED' } });
  });

  it('a paused project: 550 5.7.1 SENDING_PAUSED', async () => {
    const p = await stack.createProject('paused');
    await stack.cli('domain', 'verify', '--project', 'paused', '--name', 'acme.test', '--force');
    await stack.cli('project', 'pause', '--project', 'paused');
    const r = await refusal(p.keys.live, base);
    expect(r.response).toMatch(/^550 5\.7\.1 SENDING_PAUSED: /);
  });

  it(`over ${RATE} emails/s per project: 451 4.7.1 RATE_LIMIT_EXCEEDED, other projects unaffected`, async () => {
    const p = await stack.createProject('busy');
    await stack.cli('domain', 'verify', '--project', 'busy', '--name', 'acme.test', '--force');
    const t = pool(p.keys.live, 5);
    const started = Date.now();
    const results = await Promise.allSettled(Array.from({ length: 5 * RATE }, () => t.sendMail(base)));
    const windows = Math.ceil((Date.now() - started) / 1000) + 1; // one-second windows the burst touched, at most
    t.close();
    const ok = results.filter((r) => r.status === 'fulfilled').length;
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as { responseCode: number; response: string }] : []));
    expect(ok).toBeGreaterThanOrEqual(RATE);
    expect(ok).toBeLessThanOrEqual(windows * RATE);
    expect(ok).toBeLessThan(5 * RATE);
    expect(refused.length).toBe(5 * RATE - ok);
    for (const e of refused) expect(e.response).toMatch(/^451 4\.7\.1 RATE_LIMIT_EXCEEDED/);
    // Another project still sends at once; this one again after the window.
    const other = transport(acme.keys.live);
    expect(idOf((await other.sendMail(base)).response)).toBeDefined();
    other.close();
    await sleep(1100);
    const again = transport(p.keys.live);
    expect(idOf((await again.sendMail(base)).response)).toBeDefined();
    again.close();
  });
});

/** A plain-text SMTP session: sends each command after the previous reply, returns every reply line. */
function rawSession(commands: string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(smtpPort, '127.0.0.1');
    const lines: string[] = [];
    let buf = '';
    const queue = [...commands];
    sock.setEncoding('utf8');
    sock.on('data', (chunk: string) => {
      buf += chunk;
      let i: number;
      while ((i = buf.indexOf('\r\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 2);
        lines.push(line);
        if (/^\d{3} /.test(line)) {
          const next = queue.shift();
          if (next) sock.write(`${next}\r\n`);
        }
      }
    });
    sock.on('close', () => resolve(lines));
    sock.on('error', reject);
    sock.setTimeout(5000, () => sock.destroy(new Error('timeout')));
  });
}
