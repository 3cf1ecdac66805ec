// The gateway writes nodemailer's MIME tree out in one synchronous pass (gateway/mime.ts,
// serialize) instead of through its streams. nodemailer's own stream is the oracle: for every
// kind of message the gateway builds without attachments, the bytes must be the same once the
// stream's line breaks are CRLF, as nodemailer's SMTP transport sends them (the multipart
// boundary is random in each build, so it is compared by name).
import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { buildMime, buildMimeNow, buildMimeStream, type MessageParts } from '../../gateway/mime.js';

const base = (over: Partial<MessageParts>): MessageParts =>
  ({
    createdAtMs: BigInt(Date.parse('2026-11-25T10:00:00Z')),
    serviceHeaders: { 'Feedback-ID': 'p1:transactional:postgate' },
    from: 'Acme <hello@acme.test>',
    to: ['r@inbox.test'],
    cc: [],
    replyTo: [],
    subject: 'Your receipt',
    text: 'Hello there.\r\nSecond line.',
    html: '',
    headers: {},
    ...over,
  }) as MessageParts;

const long = 'word '.repeat(60).trim();
const cases: Array<[string, Partial<MessageParts>]> = [
  ['plain ASCII text (7bit)', {}],
  ['HTML only', { text: '', html: '<p>Hi <b>there</b></p>' }],
  ['text and HTML (multipart/alternative)', { html: '<p>Hi</p>' }],
  ['lines over 76 characters (quoted-printable)', { text: `${long}\r\n${long}`, html: `<p>${long}</p>` }],
  ['Latin text with accents (quoted-printable)', { text: 'Grüße aus Köln, à bientôt. Ça va très bien, merci.' }],
  ['mostly non-Latin text (base64)', { text: 'Здравствуйте! Это письмо написано по-русски. 你好，世界。' }],
  ['trailing whitespace, tabs, a lone CR and LF, and a dot line', { text: 'a  \r\nb\t\r\n.\r\nc\rd\ne \r\n\r\n' }],
  [
    'a non-ASCII subject and display names',
    { subject: 'Ihre Bestellung – Grüße 🎉', from: 'Jürgen Müller <j@acme.test>', to: ['"Doe, Jane" <jane@inbox.test>', 'Zoë <z@inbox.test>'] },
  ],
  ['a long subject and many recipients (folded headers)', { subject: long, to: Array.from({ length: 8 }, (_, i) => `Person ${i} <p${i}@inbox.test>`) }],
  [
    'cc, reply-to, custom and service headers',
    {
      cc: ['c@inbox.test'],
      replyTo: ['Support <support@acme.test>'],
      headers: { 'X-Campaign': 'winter', 'In-Reply-To': '<a@b>', References: '<a@b> <c@d>' },
      serviceHeaders: {
        'Feedback-ID': 'p1:bulk:postgate',
        'List-Unsubscribe': `<https://pg.test/unsubscribe/${'x'.repeat(90)}>, <mailto:u@pg.test?subject=unsubscribe>`,
        'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
      },
    },
  ],
  ['a header value with a run of 900 non-space characters', { headers: { 'X-Data': 'y'.repeat(950) } }],
  ['an empty text', { text: '' }],
  [
    'a 20 kB text of LF lines over 76 characters (quoted-printable, as the benchmark sends)',
    {
      text: Array.from({ length: 210 }, (_, i) => `Line ${i} of the benchmark's longer body: the order, the items, the totals and the small print.`).join('\n'),
    },
  ],
  [
    'long HTML lines with attributes and non-ASCII (escapes at line ends)',
    { html: `<p style="margin:0;color:#333">${'Grüße, señor – €5 = 5 € ; '.repeat(40)}</p>`, text: `${'=3D '.repeat(30)}\r\n${'é'.repeat(200)}` },
  ],
  ['a line over 76 characters without a letter (base64)', { text: `${'1234567890 '.repeat(10)}\r\n` }],
  ['a text over 64 kB (the encoder works in 64 kB slices)', { text: `${long}\n`.repeat(300) }],
];

async function streamed(id: string, parts: MessageParts): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of buildMimeStream(id, parts)) chunks.push(Buffer.from(c as Buffer));
  return Buffer.concat(chunks);
}

/** The boundary replaced by a name, so two builds of one message compare byte for byte. */
const named = (b: Buffer) => {
  const s = b.toString('latin1');
  const boundary = /boundary="([^"]+)"/.exec(s)?.[1];
  return boundary ? s.split(boundary).join('BOUNDARY') : s;
};

describe('buildMime', () => {
  for (const [name, over] of cases) {
    it(`writes the bytes nodemailer's stream writes: ${name}`, async () => {
      const parts = base(over);
      const fast = buildMimeNow('0193aaaa-0000-7000-8000-000000000001', parts);
      if (!fast) throw new Error('not built in one pass');
      expect(named(await buildMime('0193aaaa-0000-7000-8000-000000000001', parts))).toBe(named(fast));
      const slow = await streamed('0193aaaa-0000-7000-8000-000000000001', parts);
      // Its line breaks CRLF, as nodemailer's SMTP transport sends the stream (its LeWindows).
      expect(named(fast)).toBe(named(slow).replace(/(?<!\r)\n/g, '\r\n'));
      expect(fast.toString('latin1')).not.toMatch(/(?<!\r)\n/);
      // nodemailer's LastNewline: it ends with a line break.
      expect(fast.subarray(-2).toString()).toBe('\r\n');
    });
  }

  it('leaves a message with attachments to the stream', () => {
    const parts = base({ attachments: [{ ref: 'a', filename: 'a.txt', contentType: 'text/plain', contentId: '' }] as MessageParts['attachments'] });
    expect(buildMimeNow('0193aaaa-0000-7000-8000-000000000002', parts)).toBeUndefined();
  });
});

describe('attachment names as the receiver shows them', () => {
  /** The message built with one attachment per name, as mailparser (a receiving client) reads it back. */
  async function shown(names: string[]) {
    const attachments = names.map((filename, i) => ({ ref: `r${i}`, filename, contentType: 'application/octet-stream', contentId: '' }));
    const files = Object.fromEntries(names.map((_, i) => [`r${i}`, new Uint8Array([77, 90])]));
    const raw = await buildMime('0193aaaa-0000-7000-8000-000000000003', base({ attachments } as Partial<MessageParts>), files);
    return { raw: raw.toString('latin1'), names: (await simpleParser(raw)).attachments.map((a) => a.filename) };
  }

  it('a stored name that decodes to a refused one is never written as it is (a name stored before the rules)', async () => {
    const { names } = await shown(['=?utf-8?B?ZXZpbC5leGU=?=', 'report =?utf-8?B?ZXZpbC5leGU=?=', '\u202eexe.doc', '=?utf-8?B?cmVwb3J0LnBkZg==?=']);
    expect(names).toEqual(['attachment-1', 'attachment-2', 'attachment-3', 'report.pdf']);
  });

  it("non-ASCII in RFC 2231 (filename*=utf-8''…), quotes and semicolons escaped: each name arrives exactly as stored", async () => {
    const stored = ['résumé.pdf', 'a "quoted"; filename=evil.exe; x=.pdf', "it's; 50% off=?.pdf", 'مستند.pdf'];
    const { raw, names } = await shown(stored);
    expect(names).toEqual(stored);
    expect(raw).toContain("filename*0*=utf-8''r%C3%A9sum%C3%A9.pdf");
    // One filename parameter per part: nothing in a name became a parameter of its own.
    expect(raw.match(/^Content-Disposition:/gm)).toHaveLength(stored.length);
    expect(raw).not.toMatch(/;\s*filename=evil\.exe/);
  });
});
