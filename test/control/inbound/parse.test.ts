// control/inbound/parse.ts: a received message in Resend's receiving fields, file names that are only
// names, every header once, and the email.received webhook data.
import { describe, expect, it } from 'vitest';
import { headerRecord, parseReceived, type ReceivedMessage, receivedEventData, safeFilename } from '../../../control/inbound/parse.js';

const message = (raw: string, o: Partial<ReceivedMessage> = {}): ReceivedMessage => ({
  id: '01a2-id',
  atMs: Date.parse('2026-11-29T10:00:00Z'),
  projectId: 'p1',
  mailFrom: 'bounce@sender.test',
  rcptTo: ['support@acme.test'],
  raw: Buffer.from(raw.replace(/\n/g, '\r\n')),
  remoteIp: '127.0.0.1',
  helo: 'mx.sender.test',
  spf: 'pass',
  dkim: 'none',
  dmarc: 'fail',
  authenticationResults: 'mx; spf=pass',
  authJson: '{}',
  ...o,
});

describe('safeFilename', () => {
  it('keeps a name, drops directories and control characters, bounds the length', () => {
    expect(safeFilename('invoice.pdf')).toBe('invoice.pdf');
    expect(safeFilename('../../etc/passwd')).toBe('passwd');
    expect(safeFilename('..\\..\\win.ini')).toBe('win.ini');
    expect(safeFilename('a\r\nSet-Cookie: x.txt')).toBe('aSet-Cookie: x.txt');
    expect(safeFilename('nul\u0000byte\u007f.txt')).toBe('nulbyte.txt');
    expect(safeFilename('é'.repeat(300))).toHaveLength(255);
  });

  it('null when nothing of a name is left', () => {
    for (const n of [undefined, '', '..', '.', 'dir/', '\r\n', '   ']) expect(safeFilename(n)).toBeNull();
  });
});

describe('headerRecord', () => {
  it('by lower-case name, unfolded, a repeated header joined by newlines', () => {
    expect(
      headerRecord([
        { key: 'received', line: 'Received: from a\r\n\tby b' },
        { key: 'subject', line: 'Subject: hi: there' },
        { key: 'received', line: 'Received: from c' },
      ]),
    ).toEqual({ received: 'from a by b\nfrom c', subject: 'hi: there' });
  });
});

describe('parseReceived', () => {
  it("Resend's fields from a multipart message: addresses, bodies, attachments with ids, the checks", async () => {
    const e = await parseReceived(
      message(`From: "Ann" <ann@sender.test>
To: Support <support@acme.test>, ops@acme.test
Cc: c@acme.test
Reply-To: r@sender.test
Subject: =?UTF-8?B?SGnCoOKckw==?=
Message-ID: <m1@sender.test>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b"

--b
Content-Type: multipart/alternative; boundary="c"

--c
Content-Type: text/plain

plain body
--c
Content-Type: text/html

<p>html body</p>
--c--
--b
Content-Type: application/pdf; name="x.pdf"
Content-Disposition: attachment; filename="../x.pdf"
Content-Transfer-Encoding: base64

JVBERi0=
--b--
`),
    );
    expect(e).toMatchObject({
      id: '01a2-id',
      projectId: 'p1',
      from: 'Ann <ann@sender.test>',
      to: ['Support <support@acme.test>', 'ops@acme.test'],
      cc: ['c@acme.test'],
      bcc: [],
      replyTo: ['r@sender.test'],
      subject: 'Hi\u00a0✓',
      messageId: '<m1@sender.test>',
      mailFrom: 'bounce@sender.test',
      rcptTo: ['support@acme.test'],
      auth: { spf: 'pass', dkim: 'none', dmarc: 'fail', header: 'mx; spf=pass', details: '{}' },
    });
    expect(e.text?.trim()).toBe('plain body');
    expect(e.html).toContain('<p>html body</p>');
    expect(e.headers['message-id']).toBe('<m1@sender.test>');
    expect(e.attachments).toEqual([
      { id: expect.any(String), filename: 'x.pdf', contentType: 'application/pdf', contentDisposition: 'attachment', contentId: null, size: 5 },
    ]);
    expect(Buffer.from(e.contents[0]!).toString()).toBe('%PDF-');
    expect(e.size).toBe(e.raw.byteLength);

    const data = receivedEventData(e);
    expect(data).toEqual({
      email_id: '01a2-id',
      created_at: '2026-11-29T10:00:00.000Z',
      from: 'Ann <ann@sender.test>',
      to: ['Support <support@acme.test>', 'ops@acme.test'],
      bcc: [],
      cc: ['c@acme.test'],
      received_for: ['support@acme.test'],
      message_id: '<m1@sender.test>',
      subject: 'Hi\u00a0✓',
      attachments: [{ id: e.attachments[0]!.id, filename: 'x.pdf', content_type: 'application/pdf', content_disposition: 'attachment', content_id: null }],
      authentication: { spf: 'pass', dkim: 'none', dmarc: 'fail' },
    });
  });

  it('a message without From or bodies: the envelope sender stands in, nulls where nothing was sent', async () => {
    const e = await parseReceived(message('Subject: bare\n\n'));
    expect(e).toMatchObject({ from: 'bounce@sender.test', to: [], text: null, html: null, messageId: '', attachments: [] });
  });

  it('names with line breaks or quotes cannot break out of an address', async () => {
    const e = await parseReceived(message('From: =?UTF-8?B?RXZlPGJhZD4iDQpCY2M6IHg=?= <eve@evil.test>\nSubject: x\n\ny'));
    expect(e.from).toBe('Eve bad Bcc: x <eve@evil.test>');
  });
});
