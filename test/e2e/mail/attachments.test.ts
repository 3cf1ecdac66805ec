// Attachments end to end: a PDF-like binary and an inline image (cid:) sent over HTTP, a batch,
// gRPC, SMTP and the Resend SDK go through control, the gateway (built, DKIM-signed and queued
// through files) and a real SMTP receiver on loopback, and arrive byte for byte with their
// names, types and content ids. Bad attachments are 400 INVALID_REQUEST and reach no one; an
// accepted email's files survive both processes dying before it was handed to the gateway.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { create } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { simpleParser, type ParsedMail } from 'mailparser';
import nodemailer from 'nodemailer';
import { Resend } from 'resend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grpcClient, unary } from '../../../proto/grpc.js';
import {
  PostgateService,
  SendBatchRequestSchema,
  SendEmailRequestSchema,
  type SendBatchResponse,
  type SendEmailResponse,
} from '../../../proto/gen/postgate/v1/public_pb.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, type MxSink, messageIdOf, type ReceivedMessage } from '../../helpers/mx-sink.js';
import { Stack, sleep, type Project } from '../../helpers/stack.js';
import { authResults, publishDomain } from '../deliverability/helpers.js';

let dns: DnsServer;
let sink: MxSink;
let stack: Stack;
let p: Project;
let client: ReturnType<typeof grpcClient>;

const MB = 1024 * 1024;
// A PDF-like binary (every byte value, CR/LF and dots included) and a PNG-like image.
const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1'), crypto.randomBytes(300_000), Buffer.from('\r\n.\r\n%%EOF\n')]);
const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), crypto.randomBytes(5000)]);
const html = '<p>Our logo:</p>\n.<img src="cid:logo@acme">';
const files = () => [
  { filename: 'report.pdf', content: pdf.toString('base64') },
  { filename: 'logo.png', content: png.toString('base64'), content_id: 'logo@acme' },
];

let n = 0;
const rcpt = () => `att${++n}@inbox.test`;
const send = (fields: Record<string, unknown>) =>
  stack.api('POST', '/v1/emails', p.keys.live, {
    from: 'Acme <hello@acme.test>',
    to: rcpt(),
    subject: 'Files',
    html,
    text: 'See attached.\n.dot line',
    ...fields,
  });

async function received(id: string, count = 1, timeoutMs = 30_000): Promise<ReceivedMessage[]> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const got = sink.messages.filter((x) => messageIdOf(x) === id);
    if (got.length >= count) return got;
    await sleep(100);
  }
  throw new Error(`email ${id} did not reach the receiving server`);
}
const parse = (m: ReceivedMessage) => simpleParser(m.raw, { skipImageLinks: true });

/** The PDF as an attachment and the PNG inline, byte-identical, and the signature still valid. */
async function expectFiles(m: ReceivedMessage): Promise<ParsedMail> {
  const mail = await parse(m);
  const report = mail.attachments.find((a) => a.filename === 'report.pdf');
  const logo = mail.attachments.find((a) => a.filename === 'logo.png');
  expect(report?.contentType).toBe('application/pdf');
  expect(report?.contentDisposition).toBe('attachment');
  expect(report?.content.equals(pdf)).toBe(true);
  expect(logo?.contentType).toBe('image/png');
  expect(logo?.cid).toBe('logo@acme');
  expect(logo?.contentDisposition).toBe('inline');
  expect(logo?.related).toBe(true);
  expect(logo?.content.equals(png)).toBe(true);
  expect(mail.html).toContain('<img src="cid:logo@acme">');
  expect(mail.html).toContain('\n.<img');
  expect(mail.text).toContain('\n.dot line');
  expect((await authResults(m.raw, m.mailFrom, dns)).dkim).toEqual(['pass']);
  return mail;
}

beforeAll(async () => {
  sink = await startMxSink();
  dns = await startDnsServer([
    { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
    { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
  ]);
  stack = await Stack.start({ env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port) } });
  p = await stack.createProject('attach');
  await stack.setPlan('attach', 'scale', { rate: 100000 });
  // Published in DNS, so the receiver's DKIM check runs against the real key.
  await publishDomain(stack, p.keys.live, dns, 'acme.test');
  client = grpcClient(PostgateService, `127.0.0.1:${stack.env.POSTGATE_GRPC_PORT}`);
});
afterAll(async () => {
  client?.close();
  await stack?.stop();
  await sink?.close();
  await dns?.close();
});

describe('attachments arrive byte for byte', () => {
  it('POST /v1/emails: every recipient copy carries them; GET lists them without their content', async () => {
    const to = [rcpt(), rcpt()];
    const r = await send({ to, attachments: files() });
    expect(r.status).toBe(202);
    const copies = await received(r.body.id, 2);
    for (const m of copies) await expectFiles(m);
    const email = await stack.waitEmail(p.keys.live, r.body.id, (e) => e.status === 'sent');
    expect(email.attachments).toEqual([
      { id: expect.any(String), filename: 'report.pdf', content_type: 'application/pdf', size: pdf.length },
      { id: expect.any(String), filename: 'logo.png', content_type: 'image/png', content_id: 'logo@acme', size: png.length },
    ]);
    expect(JSON.stringify(email)).not.toContain(png.toString('base64').slice(0, 100));
  });

  it('POST /v1/emails/batch', async () => {
    const r = await stack.api('POST', '/v1/emails/batch', p.keys.live, [
      { from: 'hello@acme.test', to: rcpt(), subject: 'Batch 1', html, text: 'See attached.\n.dot line', attachments: files() },
      { from: 'hello@acme.test', to: rcpt(), subject: 'Batch 2', html, text: 'See attached.\n.dot line', attachments: files() },
    ]);
    expect(r.status).toBe(202);
    expect(r.body.data).toHaveLength(2);
    for (const item of r.body.data) await expectFiles((await received(item.id))[0]!);
  });

  it('gRPC SendEmail and SendBatch (attachments as bytes)', async () => {
    const md = new grpc.Metadata();
    md.set('x-service-key', p.keys.live);
    const email = {
      from: 'hello@acme.test',
      subject: 'Over gRPC',
      html,
      text: 'See attached.\n.dot line',
      attachments: [
        { filename: 'report.pdf', content: pdf },
        { filename: 'logo.png', content: png, contentType: 'image/png', contentId: 'logo@acme' },
      ],
    };
    const one = await unary<SendEmailResponse>(client, 'sendEmail', create(SendEmailRequestSchema, { ...email, to: [rcpt()] }), md);
    await expectFiles((await received(one.id))[0]!);
    const batch = await unary<SendBatchResponse>(
      client,
      'sendBatch',
      create(SendBatchRequestSchema, { emails: [create(SendEmailRequestSchema, { ...email, to: [rcpt()] })] }),
      md,
    );
    expect(batch.data[0]!.code).toBe('');
    await expectFiles((await received(batch.data[0]!.id))[0]!);

    const bad = await unary(
      client,
      'sendEmail',
      create(SendEmailRequestSchema, { ...email, to: [rcpt()], attachments: [{ filename: 'a.exe', content: pdf }] }),
      md,
    ).then(
      () => undefined,
      (e: grpc.ServiceError) => e,
    );
    expect(bad?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(bad?.metadata.get('x-postgate-code')[0]).toBe('INVALID_REQUEST');
  });

  it('SMTP submission keeps the MIME parts: names, types, the inline Content-ID', async () => {
    const t = nodemailer.createTransport({
      host: '127.0.0.1',
      port: Number(stack.env.POSTGATE_SMTP_PORT),
      auth: { user: 'x', pass: p.keys.live },
      tls: { rejectUnauthorized: false },
    });
    try {
      const info = await t.sendMail({
        from: 'hello@acme.test',
        to: rcpt(),
        subject: 'Over SMTP',
        html,
        text: 'See attached.\n.dot line',
        attachments: [
          { filename: 'report.pdf', content: pdf },
          { filename: 'logo.png', content: png, cid: 'logo@acme' },
        ],
      });
      const id = /queued as ([0-9a-f-]{36})$/.exec(info.response)?.[1];
      expect(id).toBeDefined();
      await expectFiles((await received(id!))[0]!);
      // The same rules as the API: a program is refused, nothing is sent.
      await expect(
        t.sendMail({ from: 'hello@acme.test', to: rcpt(), subject: 'Exe', text: 'x', attachments: [{ filename: 'run.exe', content: 'MZ' }] }),
      ).rejects.toMatchObject({
        responseCode: 550,
        response: expect.stringMatching(/^550 5\.6\.0 INVALID_REQUEST: attachments\[0\]: \.exe files are refused/),
      });
    } finally {
      t.close();
    }
  });

  it("the Resend SDK's attachments (Buffer content, contentType, contentId); its `path` is refused", async () => {
    const resend = new Resend(p.keys.live, { baseUrl: `${stack.url}/v1` } as never);
    const { data, error } = await resend.emails.send({
      from: 'Acme <hello@acme.test>',
      to: rcpt(),
      subject: 'From the SDK',
      html,
      text: 'See attached.\n.dot line',
      attachments: [
        { filename: 'report.pdf', content: pdf },
        { filename: 'logo.png', content: png, contentType: 'image/png', contentId: 'logo@acme' },
      ],
    });
    expect(error).toBeNull();
    await expectFiles((await received(data!.id))[0]!);
    const remote = await resend.emails.send({
      from: 'hello@acme.test',
      to: rcpt(),
      subject: 'Remote',
      text: 'x',
      attachments: [{ filename: 'a.pdf', path: 'http://169.254.169.254/latest/meta-data' }],
    });
    expect(remote.data).toBeNull();
    expect(remote.error).toMatchObject({ statusCode: 400, message: expect.stringMatching(/path: files are not fetched from URLs/) });
  });

  it('exactly 40 MB (after decoding) is taken and delivered whole', async () => {
    const big = crypto.randomBytes(40 * MB);
    const r = await send({ subject: 'Forty', attachments: [{ filename: 'big.bin', content: big.toString('base64') }] });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    // Generous: 55 MB is built, signed, queued and sent on a machine other tests share.
    const [m] = await received(r.body.id, 1, 180_000);
    const mail = await parse(m!);
    expect(mail.attachments[0]!.content.equals(big)).toBe(true);
    expect((await authResults(m!.raw, m!.mailFrom, dns)).dkim).toEqual(['pass']);
    // Built, signed and spooled through files (gateway/spool.ts): none is left behind once queued.
    for (const dir of ['build', 'spool']) expect(fs.readdirSync(path.join(stack.dataDir, 'gateway', dir)), dir).toEqual([]);
  }, 300_000);
});

describe('bad attachments: 400 INVALID_REQUEST, nothing sent', () => {
  it('bad base64, too many, just over 40 MB, a refused type, `path`, a batch over 40 MB in all', async () => {
    const before = sink.messages.length;
    const cases: Array<[string, unknown, RegExp]> = [
      ['bad base64', { attachments: [{ filename: 'a.pdf', content: 'this is not base64!' }] }, /attachments\[0\]\.content is not valid base64/],
      [
        'too many',
        { attachments: Array.from({ length: 51 }, (_, i) => ({ filename: `f${i}.txt`, content: 'YQ==' })) },
        /attachments must NOT have more than 50 items/,
      ],
      [
        'just over 40 MB',
        { attachments: [{ filename: 'big.bin', content: Buffer.alloc(40 * MB + 1).toString('base64') }] },
        /at least 41943041 bytes of attachments after decoding; at most 41943040 \(40 MB\)/,
      ],
      [
        'over 40 MB in two files',
        { attachments: [20, 20].map((s, i) => ({ filename: `${i}.bin`, content: Buffer.alloc(s * MB + i).toString('base64') })) },
        /at most 41943040/,
      ],
      ['a program', { attachments: [{ filename: 'invoice.pdf.exe', content: 'TVo=' }] }, /attachments\[0\]: \.exe files are refused/],
      [
        'a script by type',
        { attachments: [{ filename: 'x.dat', content: 'TVo=', content_type: 'application/x-msdownload' }] },
        /application\/x-msdownload files are refused/,
      ],
      ['path', { attachments: [{ filename: 'a.pdf', path: 'https://example.com/a.pdf' }] }, /attachments\[0\]\.path: files are not fetched from URLs/],
    ];
    for (const [name, fields, message] of cases) {
      const r = await send({ subject: `Refused ${name}`, ...(fields as object) });
      expect(r.status, name).toBe(400);
      expect(r.body.code, name).toBe('INVALID_REQUEST');
      expect(r.body.error, name).toMatch(message);
    }
    const item = (size: number) => ({
      from: 'hello@acme.test',
      to: rcpt(),
      subject: 'Refused batch',
      text: 'x',
      attachments: [{ filename: 'a.bin', content: Buffer.alloc(size).toString('base64') }],
    });
    const batch = await stack.api('POST', '/v1/emails/batch', p.keys.live, [item(21 * MB), item(20 * MB)]);
    expect(batch.status).toBe(400);
    expect(batch.body).toMatchObject({ code: 'INVALID_REQUEST', error: expect.stringMatching(/a batch carries at most 41943040 \(40 MB\) in total/) });
    // A batch item with a bad attachment is refused on its own; the others go.
    const mixed = await stack.api('POST', '/v1/emails/batch', p.keys.live, [
      { from: 'hello@acme.test', to: rcpt(), subject: 'Refused item', text: 'x', attachments: [{ filename: 'run.bat', content: 'YQ==' }] },
      { from: 'hello@acme.test', to: rcpt(), subject: 'Kept item', text: 'x', attachments: [{ filename: 'ok.txt', content: 'YQ==' }] },
    ]);
    expect(mixed.status).toBe(202);
    expect(mixed.body.data[0]).toMatchObject({ code: 'INVALID_REQUEST', error: expect.stringMatching(/\.bat files are refused/) });
    await received(mixed.body.data[1].id);
    await sleep(1000);
    const subjects = await Promise.all(sink.messages.slice(before).map(async (m) => (await parse(m)).subject));
    expect(subjects.filter((s) => s?.startsWith('Refused'))).toEqual([]);
  }, 120_000);
});

describe('attachment names: judged as the receiving client shows them', () => {
  // Each disguises a program; before, each was taken (202) and the receiver showed a .exe (or cod.exe).
  const disguised: Array<[string, RegExp]> = [
    ['=?utf-8?B?ZXZpbC5leGU=?=', /\.exe files are refused/],
    ['report =?utf-8?B?ZXZpbC5leGU=?=', /\.exe files are refused/],
    ['=?UTF-8?Q?evil=2Eexe?=', /\.exe files are refused/],
    ['=?utf-8?B?ZXZp?= =?utf-8?B?bC5leGU=?=', /\.exe files are refused/],
    ['=?utf-8?B?PT91dGYtOD9CP1pYWnBiQzVsZUdVPT89?=', /filename contains a MIME encoded word/],
    ['evil.ｅｘｅ', /\.exe files are refused/],
    ['evil.ex\u200be', /\.exe files are refused/],
    ['\u202eexe.doc', /filename contains bidi override characters/],
    ['a.exe::$DATA', /\.exe files are refused/],
    ['a.exe.', /\.exe files are refused/],
  ];
  // Kept as given (the encoded one decoded) and shown so: non-ASCII in RFC 2231, specials escaped.
  const good: Array<[string, string]> = [
    ['résumé.pdf', 'résumé.pdf'],
    ['=?utf-8?B?cmVwb3J0LnBkZg==?=', 'report.pdf'],
    ['a "quoted"; filename=evil.exe; x=.pdf', 'a "quoted"; filename=evil.exe; x=.pdf'],
    ['مستند.pdf', 'مستند.pdf'],
  ];
  const md = () => {
    const m = new grpc.Metadata();
    m.set('x-service-key', p.keys.live);
    return m;
  };
  const smtp = () =>
    nodemailer.createTransport({
      host: '127.0.0.1',
      port: Number(stack.env.POSTGATE_SMTP_PORT),
      auth: { user: 'x', pass: p.keys.live },
      tls: { rejectUnauthorized: false },
    });
  /** A submitted message whose one attachment's Content-Disposition parameters are written by hand (RFC 2231). */
  const rawWith = (to: string, subject: string, params: string) =>
    [
      'From: hello@acme.test',
      `To: ${to}`,
      `Subject: ${subject}`,
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary=b',
      '',
      '--b',
      'Content-Type: text/plain',
      '',
      'hi',
      '--b',
      'Content-Type: application/octet-stream',
      `Content-Disposition: attachment;${params}`,
      'Content-Transfer-Encoding: base64',
      '',
      'TVo=',
      '--b--',
      '',
    ].join('\r\n');

  it('REST, batch and gRPC refuse a disguised program (400 INVALID_REQUEST); nothing reaches the receiver', async () => {
    const before = sink.messages.length;
    for (const [filename, message] of disguised) {
      const r = await send({ subject: 'Refused name', attachments: [{ filename, content: 'TVo=' }] });
      expect(r.status, filename).toBe(400);
      expect(r.body, filename).toMatchObject({ code: 'INVALID_REQUEST', error: expect.stringMatching(message) });
    }
    const batch = await stack.api(
      'POST',
      '/v1/emails/batch',
      p.keys.live,
      disguised.map(([filename]) => ({
        from: 'hello@acme.test',
        to: rcpt(),
        subject: 'Refused name',
        text: 'x',
        attachments: [{ filename, content: 'TVo=' }],
      })),
    );
    expect(batch.status).toBe(202);
    for (const [i, [filename, message]] of disguised.entries())
      expect(batch.body.data[i], filename).toMatchObject({ code: 'INVALID_REQUEST', error: expect.stringMatching(message) });
    for (const [filename] of disguised) {
      const req = create(SendEmailRequestSchema, {
        from: 'hello@acme.test',
        to: [rcpt()],
        subject: 'Refused name',
        text: 'x',
        attachments: [{ filename, content: pdf }],
      });
      const err = await unary(client, 'sendEmail', req, md()).then(
        () => undefined,
        (e: grpc.ServiceError) => e,
      );
      expect(err?.code, filename).toBe(grpc.status.INVALID_ARGUMENT);
    }
    await sleep(1000);
    const subjects = await Promise.all(sink.messages.slice(before).map(async (m) => (await parse(m)).subject));
    expect(subjects.filter((s) => s === 'Refused name')).toEqual([]);
  }, 60_000);

  it('SMTP: RFC 2231 and encoded-word forms are read, then refused the same (550 5.6.0)', async () => {
    const t = smtp();
    const wrap = (s: string) => `=?utf-8?B?${Buffer.from(s).toString('base64')}?=`;
    const pct = (s: string) => [...Buffer.from(s)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
    try {
      for (const params of [
        "\r\n filename*0*=utf-8''evil;\r\n filename*1*=%2Eexe",
        '\r\n filename*0="=?utf-8?B?ZXZp";\r\n filename*1="bC5leGU=?="',
        // mailparser (as many clients) decodes the RFC 2231 value, then encoded words twice: one more layer is left.
        ` filename*=utf-8''${pct(wrap(wrap('=?utf-8?B?ZXZpbC5leGU=?=')))}`,
        ` filename*=utf-8''${pct('evil.ｅｘｅ')}`,
        ` filename*=utf-8''${pct('\u202eexe.doc')}`,
        ' filename="a.exe::$DATA"',
      ]) {
        const to = rcpt();
        await expect(t.sendMail({ envelope: { from: 'hello@acme.test', to }, raw: rawWith(to, 'Refused name', params) }), params).rejects.toMatchObject({
          responseCode: 550,
          response: expect.stringMatching(/^550 5\.6\.0 INVALID_REQUEST: attachments\[0\]/),
        });
      }
      // A good non-ASCII name in RFC 2231 continuations arrives shown as it was sent.
      const to = rcpt();
      const info = await t.sendMail({
        envelope: { from: 'hello@acme.test', to },
        raw: rawWith(to, 'Good name', "\r\n filename*0*=utf-8''r%C3%A9sum;\r\n filename*1*=%C3%A9.pdf"),
      });
      const id = /queued as ([0-9a-f-]{36})$/.exec(info.response)?.[1];
      const mail = await parse((await received(id!))[0]!);
      expect(mail.attachments.map((a) => a.filename)).toEqual(['résumé.pdf']);
    } finally {
      t.close();
    }
  }, 60_000);

  it('good names arrive shown as given: non-ASCII in RFC 2231, an encoded word as its decoded name, specials escaped', async () => {
    const r = await send({ subject: 'Good names', attachments: good.map(([filename]) => ({ filename, content: pdf.toString('base64') })) });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const [m] = await received(r.body.id);
    const mail = await parse(m!);
    expect(mail.attachments.map((a) => a.filename)).toEqual(good.map(([, shown]) => shown));
    for (const a of mail.attachments) expect(a.content.equals(pdf)).toBe(true);
    const raw = m!.raw.toString('latin1');
    expect(raw).toContain("filename*0*=utf-8''r%C3%A9sum%C3%A9.pdf");
    // No raw encoded word and no parameter a name could have added.
    expect(raw).not.toContain('cmVwb3J0LnBkZg==');
    expect(raw).not.toMatch(/;\s*filename=evil\.exe/);
    expect((await authResults(m!.raw, m!.mailFrom, dns)).dkim).toEqual(['pass']);
    const email = await stack.waitEmail(p.keys.live, r.body.id, (e) => e.status === 'sent');
    expect(email.attachments.map((a: { filename: string }) => a.filename)).toEqual(good.map(([, shown]) => shown));
    // Over gRPC, the same.
    const one = await unary<SendEmailResponse>(
      client,
      'sendEmail',
      create(SendEmailRequestSchema, {
        from: 'hello@acme.test',
        to: [rcpt()],
        subject: 'Good names',
        text: 'x',
        attachments: good.map(([filename]) => ({ filename, content: pdf })),
      }),
      md(),
    );
    expect((await parse((await received(one.id))[0]!)).attachments.map((a) => a.filename)).toEqual(good.map(([, shown]) => shown));
  }, 60_000);
});

describe('durability', () => {
  it("an accepted email's files survive both processes dying before the gateway got it", async () => {
    // The gateway is stopped before the send, so nothing can reach it: after both die, only control's store has the files.
    const gateway = stack.kill('gateway', 'SIGSTOP');
    let r: Awaited<ReturnType<typeof send>>;
    try {
      r = await send({ subject: 'Survives', attachments: files() });
      expect(r.status).toBe(202);
      await sleep(300);
      stack.kill('gateway', 'SIGKILL');
    } catch (err) {
      process.kill(gateway, 'SIGCONT');
      throw err;
    }
    const control = stack.kill('control', 'SIGKILL');
    await stack.waitRestart('gateway', gateway);
    await stack.waitRestart('control', control);
    await expectFiles((await received(r.body.id, 1, 60_000))[0]!);
    expect((await stack.waitEmail(p.keys.live, r.body.id, (e) => e.status === 'sent')).attachments).toHaveLength(2);
  }, 120_000);
});
