// The attachment rules (control/mail/attachments.ts), pure: what is accepted, what the stored
// request keeps, and the 400 each kind of bad attachment gets.
import { describe, expect, it } from 'vitest';
import { attachmentBodyBytes, attachmentContents, checkAttachments, checkBatchAttachments, type AttachmentInput } from '../../../control/mail/attachments.js';
import { parseMessage, toSendRequest } from '../../../control/smtp/message.js';
import { ApiError } from '../../../core/errors.js';

const limits = { maxAttachments: 3, maxAttachmentBytes: 1000 };
const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

/** The ApiError a call throws. */
function refusal(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('accepted');
}
const refused = (list: AttachmentInput[], l = limits) => refusal(() => checkAttachments(list, l));

describe('checkAttachments', () => {
  it('keeps what describes each file (never its bytes) and decodes them exactly', () => {
    const bytes = Buffer.from([0, 1, 2, 250, 255, 13, 10, 46]);
    const list: AttachmentInput[] = [
      { filename: 'report.pdf', content: b64(bytes) },
      { filename: 'logo.png', content: b64('png'), content_id: '<logo@acme>' },
      { content: b64('x'), content_type: 'image/jpeg' },
    ];
    const meta = checkAttachments(list, limits);
    expect(meta).toEqual([
      { id: expect.any(String), filename: 'report.pdf', content_type: 'application/pdf', size: 8 },
      { id: expect.any(String), filename: 'logo.png', content_type: 'image/png', content_id: 'logo@acme', size: 3 },
      { id: expect.any(String), filename: 'attachment-3.jpeg', content_type: 'image/jpeg', size: 1 },
    ]);
    expect(JSON.stringify(meta)).not.toContain(b64(bytes));
    const contents = attachmentContents(list);
    expect(contents[0]!.equals(bytes)).toBe(true);
    expect(contents.map((c) => c.length)).toEqual(meta.map((m) => m.size));
  });

  it('takes base64 in MIME lines, unpadded or URL-safe, and an empty file; counts decoded bytes', () => {
    const bytes = Buffer.from(Array.from({ length: 200 }, (_, i) => i));
    const wrapped = b64(bytes).replace(/.{76}/g, '$&\r\n');
    const [m] = checkAttachments([{ filename: 'a.bin', content: wrapped }], limits);
    expect(m!.size).toBe(200);
    expect(attachmentContents([{ content: wrapped }])[0]!.equals(bytes)).toBe(true);
    expect(checkAttachments([{ filename: 'a.txt', content: 'YWI' }], limits)[0]!.size).toBe(2);
    expect(checkAttachments([{ filename: 'a.bin', content: Buffer.from([251, 255]).toString('base64url') }], limits)[0]!.size).toBe(2);
    expect(checkAttachments([{ filename: 'empty.txt', content: '' }], limits)[0]!.size).toBe(0);
    expect(checkAttachments(undefined, limits)).toEqual([]);
  });

  it('refuses bad base64 with a 400 that says so', () => {
    for (const content of ['not base64!', 'YW=I', 'YWJjZ', 'YQ===']) {
      const e = refused([{ filename: 'a.txt', content }]);
      expect(e.status, content).toBe(400);
      expect(e.code).toBe('INVALID_REQUEST');
      expect(e.message).toMatch(/^attachments\[0\]\.content is not valid base64/);
    }
  });

  it('refuses more files than the limit, and more bytes (after decoding) than the limit', () => {
    const e = refused(Array.from({ length: 4 }, () => ({ filename: 'a.txt', content: b64('a') })));
    expect(e.message).toBe('attachments: at most 3 per email (got 4)');
    expect(checkAttachments([{ filename: 'a.bin', content: b64(Buffer.alloc(1000)) }], limits)[0]!.size).toBe(1000);
    const over = refused([
      { filename: 'a.bin', content: b64(Buffer.alloc(600)) },
      { filename: 'b.bin', content: b64(Buffer.alloc(401)) },
    ]);
    expect(over.message).toMatch(/1001 bytes of attachments after decoding; at most 1000 \(0 MB\)/);
  });

  it('refuses programs and scripts by extension (the last one, as Windows reads it) and by type', () => {
    for (const filename of [
      'setup.exe',
      'invoice.pdf.exe',
      'RUN.BAT',
      'x.js',
      'tool.msi',
      'a.ps1',
      'evil.exe. ',
      'app.jar',
      'x.vbs',
      'x.scr',
      'x.cmd',
      'x.com',
    ]) {
      const e = refused([{ filename, content: b64('MZ') }]);
      expect(e.code, filename).toBe('INVALID_REQUEST');
      expect(e.message).toMatch(/^attachments\[0\]: \.\w+ files are refused/);
    }
    expect(refused([{ content: b64('MZ'), content_type: 'application/x-msdownload' }]).message).toMatch(/refused/);
    expect(refused([{ filename: 'x.dat', content: b64('MZ'), content_type: 'application/x-msdownload' }]).message).toMatch(
      /application\/x-msdownload files are refused/,
    );
    // Names that only look alike are fine.
    expect(checkAttachments([{ filename: 'notes.exe.txt', content: b64('a') }], limits)[0]!.content_type).toBe('text/plain');
  });

  it('refuses `path` (no URL is ever fetched), a missing content, and bad names, types and content ids', () => {
    expect(refused([{ filename: 'a.pdf', path: 'https://example.com/a.pdf' }]).message).toMatch(/^attachments\[0\]\.path: files are not fetched from URLs/);
    expect(refused([{ filename: 'a.pdf' }]).message).toMatch(/content is required/);
    expect(refused([{ filename: '../etc/passwd', content: b64('a') }]).message).toMatch(/file name, not a path/);
    expect(refused([{ filename: 'a\r\nX-Evil: 1', content: b64('a') }]).message).toMatch(/control characters/);
    expect(refused([{ filename: ' ', content: b64('a') }]).message).toMatch(/non-empty/);
    expect(refused([{ filename: 'a.txt', content: b64('a'), content_type: 'text/plain\r\nX-Evil: 1' }]).message).toMatch(/not a MIME type/);
    expect(refused([{ filename: 'a.txt', content: b64('a'), content_type: 'multipart/mixed' }]).message).toMatch(/multipart/);
    expect(refused([{ filename: 'a.png', content: b64('a'), content_id: 'has space' }]).message).toMatch(/content_id/);
    expect(
      refused([
        { filename: 'a.png', content: b64('a'), content_id: 'x@y' },
        { filename: 'b.png', content: b64('a'), content_id: '<x@y>' },
      ]).message,
    ).toMatch(/given twice/);
    expect(checkAttachments([{ filename: 'a.txt', content: b64('a'), content_type: 'text/plain; charset="utf-8"' }], limits)[0]!.content_type).toBe(
      'text/plain; charset="utf-8"',
    );
    expect(checkAttachments([{ filename: false, content: b64('a'), content_type: 'image/png' }], limits)[0]!.filename).toBe('attachment-1.png');
  });
});

describe('the name is judged as a mail client shows it', () => {
  const refusedName = (filename: string) => refused([{ filename, content: b64('MZ') }]).message;

  it('decodes RFC 2047 encoded words (B and Q) before judging, and keeps the decoded name', () => {
    for (const filename of [
      '=?utf-8?B?ZXZpbC5leGU=?=',
      'report =?utf-8?B?ZXZpbC5leGU=?=',
      '=?UTF-8?Q?evil=2Eexe?=',
      '=?utf-8?q?invoice_2024.scr?=',
      '=?utf-8?B?ZXZp?= =?utf-8?B?bC5leGU=?=',
      '=?iso-8859-1?Q?r=E9sum=E9.exe?=',
    ])
      expect(refusedName(filename), filename).toMatch(/^attachments\[0\]: \.(exe|scr) files are refused/);
    const [m] = checkAttachments([{ filename: '=?utf-8?B?cmVwb3J0LnBkZg==?=', content: b64('%PDF') }], limits);
    expect(m).toMatchObject({ filename: 'report.pdf', content_type: 'application/pdf' });
    expect(checkAttachments([{ filename: '=?utf-8?Q?r=C3=A9sum=C3=A9.pdf?=', content: b64('%PDF') }], limits)[0]!.filename).toBe('résumé.pdf');
  });

  it('refuses an encoded word that does not decode to a plain name (unknown charset, one inside another)', () => {
    expect(refusedName('=?x-unknown?B?ZXZpbC5leGU=?=')).toMatch(/^attachments\[0\]\.filename contains a MIME encoded word/);
    // "=?utf-8?B?ZXZpbC5leGU=?=" encoded once more: mailparser decodes RFC 2231 values twice.
    expect(refusedName('=?utf-8?B?PT91dGYtOD9CP1pYWnBiQzVsZUdVPT89?=')).toMatch(/encoded word/);
    expect(refusedName('=?utf-8?Q?a=0D=0AX-Evil:_1.pdf?=')).toMatch(/control characters/);
    expect(refusedName('=?utf-8?Q?..=2F..=2Fetc=2Fpasswd?=')).toMatch(/not a path/);
  });

  it('compares after NFKC, without invisible characters, NTFS streams and trailing dots or spaces', () => {
    for (const filename of ['evil.ｅｘｅ', 'evil．exe', 'evil.ex\u200be', 'evil.exe\u200d', 'a.exe::$DATA', 'a.exe:stream', 'a.exe.', 'a.exe . '])
      expect(refusedName(filename), JSON.stringify(filename)).toMatch(/\.exe files are refused/);
  });

  it('refuses bidi overrides: `\u202Eexe.doc` is shown as cod.exe', () => {
    for (const filename of ['\u202eexe.doc', 'invoice\u202efdp.pdf', 'a\u2067b.txt'])
      expect(refusedName(filename), JSON.stringify(filename)).toMatch(/^attachments\[0\]\.filename contains bidi override characters/);
  });

  it('keeps good names as given: non-ASCII, right-to-left scripts, quotes and semicolons', () => {
    for (const filename of ['résumé.pdf', 'مستند.pdf', 'نامه\u200cها.pdf', 'a "quoted"; name.pdf', 'x=?.pdf'])
      expect(checkAttachments([{ filename, content: b64('a') }], limits)[0]!.filename, filename).toBe(filename);
  });

  it('over SMTP: RFC 2231 parameters (continuations, charset) are read, then judged the same', async () => {
    const submit = async (disposition: string) => {
      const raw = [
        'From: a@acme.test',
        'To: b@ok.test',
        'Subject: x',
        'MIME-Version: 1.0',
        'Content-Type: multipart/mixed; boundary=b',
        '',
        '--b',
        'Content-Type: text/plain',
        '',
        'hi',
        '--b',
        'Content-Type: application/octet-stream',
        `Content-Disposition: attachment;${disposition}`,
        'Content-Transfer-Encoding: base64',
        '',
        'TVo=',
        '--b--',
        '',
      ].join('\r\n');
      const req = toSendRequest(await parseMessage(Buffer.from(raw)), ['b@ok.test']);
      return refusal(() => checkAttachments(req.attachments as AttachmentInput[], limits)).message;
    };
    // Continuations with a charset, and without one, of a name that is a program.
    expect(await submit("\r\n filename*0*=utf-8''evil;\r\n filename*1*=%2Eexe")).toMatch(/\.exe files are refused/);
    expect(await submit('\r\n filename*0="=?utf-8?B?ZXZp";\r\n filename*1="bC5leGU=?="')).toMatch(/\.exe files are refused/);
    // Encoded words nested in an RFC 2231 value: mailparser decodes two layers, what is left is one more.
    const wrap = (s: string) => `=?utf-8?B?${Buffer.from(s).toString('base64')}?=`;
    const pct = [...Buffer.from(wrap(wrap('=?utf-8?B?ZXZpbC5leGU=?=')))].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
    expect(await submit(` filename*=utf-8''${pct}`)).toMatch(/encoded word/);
    expect(await submit(" filename*=utf-8''evil.%EF%BD%85%EF%BD%98%EF%BD%85")).toMatch(/\.exe files are refused/);
    expect(await submit(" filename*=utf-8''%E2%80%AEexe.doc")).toMatch(/bidi override/);
  });
});

describe('batch and body limits', () => {
  it('a batch carries at most maxAttachmentBytes in all its emails', () => {
    const item = (n: number) => ({ attachments: [{ filename: 'a.bin', content: b64(Buffer.alloc(n)) }] });
    expect(() => checkBatchAttachments([item(500), item(498), { to: 'x' }, null], limits)).not.toThrow();
    const e = refusal(() => checkBatchAttachments([item(500), item(510)], limits));
    expect(e.code).toBe('INVALID_REQUEST');
    expect(e.message).toMatch(/a batch carries at most 1000 .* in total/);
  });

  it('the send routes take the attachments base64-encoded with room for their JSON', () => {
    const l = { maxAttachments: 50, maxAttachmentBytes: 40 * 1024 * 1024 };
    expect(attachmentBodyBytes(l)).toBeGreaterThanOrEqual(Math.ceil(l.maxAttachmentBytes / 3) * 4 + 50 * 200);
  });
});
