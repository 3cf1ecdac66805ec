// control/smtp/simple-message.ts reads single-part text messages without mailparser's streams.
// mailparser is the oracle: for every message the fast path takes, the parsed fields the SMTP
// door reads and the send request it makes (or the refusal) are the same; messages it does not
// take (multipart, other charsets, flowed text, odd encodings) are left to mailparser.
import { simpleParser, type ParsedMail } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { PARSE, idempotencyKeyOf, toSendRequest } from '../../../control/smtp/message.js';
import { parseSimpleMessage } from '../../../control/smtp/simple-message.js';
import { seeded } from '../../helpers/seeded.js';

/** What the SMTP door reads of a parsed message, and what it makes of it. */
function outcome(mail: ParsedMail, envelope: string[]) {
  const attempt = (fn: () => unknown) => {
    try {
      return { value: fn() };
    } catch (err) {
      return { error: (err as Error).message };
    }
  };
  return {
    fields: {
      text: mail.text,
      html: mail.html || undefined,
      subject: mail.subject,
      headerLines: mail.headerLines.map((h) => ({ key: h.key, line: h.line })),
      from: mail.from?.value,
      to: [mail.to ?? []].flat().map((a) => a.value),
      cc: [mail.cc ?? []].flat().map((a) => a.value),
      replyTo: mail.replyTo?.value,
      attachments: mail.attachments.length,
    },
    request: attempt(() => toSendRequest(mail, envelope)),
    idempotencyKey: attempt(() => idempotencyKeyOf(mail)),
  };
}

async function compare(raw: string, envelope = ['r@ok.test', 's@ok.test', 'c@ok.test']): Promise<boolean> {
  const bytes = Buffer.from(raw, 'utf8');
  const fast = parseSimpleMessage(bytes, PARSE);
  if (!fast) return false;
  expect(outcome(fast, envelope)).toEqual(outcome(await simpleParser(bytes, PARSE), envelope));
  return true;
}

const qp = (s: string) =>
  Buffer.from(s)
    .toString('latin1')
    .replace(/[=\x80-\xff]/g, (c) => `=${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)
    .replace(/(.{70})/g, '$1=\r\n');
const b64 = (s: string) =>
  (
    Buffer.from(s)
      .toString('base64')
      .match(/.{1,76}/g) ?? []
  ).join('\r\n');

describe('single-part messages read without mailparser', () => {
  const body = 'Thanks for your order.\r\nLine two: Grüße, €5 = 5 €.\r\n\r\n-- \r\nAcme  \r\n';
  const cases: Array<[string, string]> = [
    ['plain text, no MIME headers', `From: Acme <hello@acme.test>\r\nTo: r@ok.test\r\nSubject: Your receipt\r\n\r\nThanks for your order.\r\n`],
    [
      'UTF-8, 8bit, names quoted and encoded, cc and reply-to, folded headers',
      `From: "Doe, Jane" <jane@acme.test>\r\nTo: R <r@ok.test>,\r\n s@ok.test\r\nCc: =?UTF-8?B?0JLRgdGR?= <c@ok.test>\r\nReply-To: Support <support@acme.test>\r\nSubject: =?UTF-8?Q?Hello_=E2=9C=93?= and\r\n more\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset="UTF-8"\r\nContent-Transfer-Encoding: 8bit\r\n\r\n${body}`,
    ],
    [
      'quoted-printable, with X-*, threading, tags, bulk and an idempotency key',
      `From: hello@acme.test\r\nTo: r@ok.test\r\nSubject: QP\r\nIn-Reply-To: <a@b>\r\nReferences: <a@b> <c@d>\r\nX-Campaign: c1\r\nX-Campaign: c2\r\nX-Postgate-Tags: a, b\r\nX-Postgate-Bulk: TRUE\r\nIdempotency-Key: k-1\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n${qp(`${body}${'long line '.repeat(20)}\r\n`)}`,
    ],
    [
      'base64 HTML',
      `From: hello@acme.test\r\nTo: r@ok.test\r\nSubject: B\r\nContent-Type: text/html; charset=us-ascii\r\nContent-Transfer-Encoding: base64\r\n\r\n${b64(`<p>${body}</p>`)}\r\n`,
    ],
    [
      'HTML, 7bit, LF line ends',
      `From: hello@acme.test\nTo: r@ok.test\nSubject: H\nContent-Type: text/html\nContent-Transfer-Encoding: 7bit\n\n<p>Hi</p>\n<p>there</p>\n`,
    ],
    ['an empty body', `From: hello@acme.test\r\nTo: r@ok.test\r\nSubject: empty\r\n\r\n`],
    ['an empty HTML part', `From: hello@acme.test\r\nTo: r@ok.test\r\nContent-Type: text/html\r\n\r\n`],
    ['no subject, a bare CR and no final line break', `From: hello@acme.test\r\nTo: r@ok.test\r\n\r\na\rb\r\nc`],
    ['a group in To', `From: hello@acme.test\r\nTo: Team: r@ok.test, S <s@ok.test>;\r\nSubject: g\r\n\r\nx\r\n`],
    ['a To not in the envelope (refused)', `From: hello@acme.test\r\nTo: stranger@ok.test\r\nSubject: s\r\n\r\nx\r\n`],
    ['two From lines (refused)', `From: a@acme.test\r\nFrom: b@acme.test\r\nTo: r@ok.test\r\n\r\nx\r\n`],
    ['two idempotency keys (refused)', `From: a@acme.test\r\nTo: r@ok.test\r\nIdempotency-Key: a\r\nResend-Idempotency-Key: b\r\n\r\nx\r\n`],
    [
      'malformed quoted-printable and a bad bulk value',
      `From: a@acme.test\r\nTo: r@ok.test\r\nX-Postgate-Bulk: maybe\r\nContent-Transfer-Encoding: Quoted-Printable\r\n\r\n=ZZ=\r\n=4\r\nend=`,
    ],
    [
      'a 20 kB text',
      `From: Acme <hello@acme.test>\r\nTo: r@ok.test\r\nSubject: big\r\n\r\n${'Line of the longer body: the order, the items, the totals and the small print.\r\n'.repeat(250)}`,
    ],
  ];
  for (const [name, raw] of cases) {
    it(`maps as mailparser does: ${name}`, async () => {
      expect(await compare(raw)).toBe(true);
    });
  }

  it('leaves other messages to mailparser', () => {
    const others = [
      `From: a@acme.test\r\nTo: r@ok.test\r\nContent-Type: multipart/alternative; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--\r\n`,
      `From: a@acme.test\r\nTo: r@ok.test\r\nContent-Type: text/plain; charset=iso-8859-1\r\n\r\nx\r\n`,
      `From: a@acme.test\r\nTo: r@ok.test\r\nContent-Type: text/plain; format=flowed\r\n\r\nx \r\ny\r\n`,
      `From: a@acme.test\r\nTo: r@ok.test\r\nContent-Disposition: attachment; filename=a.txt\r\n\r\nx\r\n`,
      `From: a@acme.test\r\nTo: r@ok.test\r\nContent-Type: application/pdf\r\n\r\nx\r\n`,
      `From: a@acme.test\r\nTo: r@ok.test\r\nContent-Transfer-Encoding: x-uuencode\r\n\r\nx\r\n`,
      `From: a@acme.test\r\nTo: r@ok.test\r\nContent-Transfer-Encoding: base64\r\n\r\nYQ==YQ==\r\n`,
      `From a@acme.test Thu Nov 26 10:00:00 2026\r\nFrom: a@acme.test\r\nTo: r@ok.test\r\n\r\nx\r\n`,
      `From: a@acme.test\r\nTo: r@ok.test\r\n`,
    ];
    for (const raw of others) expect(parseSimpleMessage(Buffer.from(raw), PARSE)).toBeUndefined();
  });

  it('maps 500 random single-part messages as mailparser does', async () => {
    const next = seeded(20261126);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
    const chars = ['a', 'Z', ' ', '\t', '.', '=', '\r\n', '\n', 'é', '€', '😀', '<', '>', '"', ',', ';', ':', '@'];
    let taken = 0;
    for (let n = 0; n < 500; n++) {
      let text = '';
      const length = Math.floor(next() * 300);
      while (text.length < length) text += pick(chars);
      const nl = pick(['\r\n', '\n']);
      const encoding = pick(['', '7bit', '8bit', 'quoted-printable', 'base64']);
      const encoded = encoding === 'quoted-printable' ? qp(text) : encoding === 'base64' ? b64(text) : text;
      const headers = [
        `From: ${pick(['hello@acme.test', 'Acme <hello@acme.test>', '"A, B" <hello@acme.test>', '=?UTF-8?B?SsO8cmdlbg==?= <j@acme.test>'])}`,
        `To: ${pick(['r@ok.test', 'R <r@ok.test>, s@ok.test', 'r@ok.test,\r\n\tS <s@ok.test>'])}`,
        ...(next() < 0.5 ? [`Cc: ${pick(['c@ok.test', 'C <c@ok.test>'])}`] : []),
        ...(next() < 0.7 ? [`Subject: ${pick(['Hi', '=?UTF-8?Q?Gr=C3=BC=C3=9Fe?=', 'a\r\n  folded  subject', ''])}`] : []),
        ...(next() < 0.3 ? [`X-Postgate-Tags: ${pick(['a', 'a, b', ' , '])}`] : []),
        ...(encoding ? [`Content-Transfer-Encoding: ${encoding}`] : []),
        ...(next() < 0.8 ? [`Content-Type: ${pick(['text/plain', 'text/html', 'TEXT/PLAIN; charset=UTF-8', 'text/plain; charset="us-ascii"'])}`] : []),
      ];
      const raw = `${headers.join('\r\n')}\r\n\r\n${encoded}`.replace(/\r\n/g, nl);
      if (await compare(raw)) taken++;
    }
    expect(taken).toBeGreaterThan(450);
  });
});
