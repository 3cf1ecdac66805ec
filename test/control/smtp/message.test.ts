// The mapping of a submitted message to a send request, on raw RFC 5322 text.
import { describe, expect, it } from 'vitest';
import { parseMessage, toSendRequest } from '../../../control/smtp/message.js';
import { ApiError } from '../../../core/errors.js';

const map = async (raw: string, envelope: string[]) => toSendRequest(await parseMessage(Buffer.from(raw.replace(/\n/g, '\r\n'))), envelope);

describe('toSendRequest', () => {
  it('maps headers, bodies, groups and quoted names; keeps X-* and threading headers only', async () => {
    const req = await map(
      `From: "Doe, John" <john@acme.test>
To: Team: a@ok.test, B <b@ok.test>;
Cc: =?UTF-8?B?0JLRgdGR?= <c@ok.test>
Reply-To: r@acme.test
Subject: =?UTF-8?Q?Hello_=E2=9C=93?=
Message-ID: <x@client>
Received: from evil
List-Unsubscribe: <mailto:x@evil.test>
In-Reply-To: <prev@ok.test>
X-Campaign: c1
X-Campaign: c2
X-Long: one
 two
X-Postgate-Tags: a, b
X-Postgate-Tags: c
X-Postgate-Bulk: TRUE
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary=b

--b
Content-Type: text/plain

Hi
--b
Content-Type: text/html

<p>Hi</p>
--b--
`,
      ['a@ok.test', 'b@ok.test', 'c@OK.test', 'hidden@ok.test'],
    );
    expect(req).toEqual({
      from: '"Doe, John" <john@acme.test>',
      to: ['a@ok.test', 'B <b@ok.test>'],
      cc: ['Всё <c@ok.test>'],
      bcc: ['hidden@ok.test'],
      reply_to: 'r@acme.test',
      subject: 'Hello ✓',
      text: 'Hi',
      html: '<p>Hi</p>',
      tags: ['a', 'b', 'c'],
      bulk: true,
      headers: { 'In-Reply-To': '<prev@ok.test>', 'X-Campaign': 'c1', 'X-Long': 'one two' },
    });
  });

  it('an html-only message has no text; an empty plain one has text ""', async () => {
    const html = await map('From: a@acme.test\nTo: b@ok.test\nSubject: s\nContent-Type: text/html\n\n<b>x</b>\n', ['b@ok.test']);
    expect(html.html).toContain('<b>x</b>');
    expect(html).not.toHaveProperty('text');
    const empty = await map('From: a@acme.test\nTo: b@ok.test\nSubject: s\n\n', ['b@ok.test']);
    expect(empty.text).toBe('');
  });

  it('refuses what the send request cannot carry', async () => {
    const cases: Array<[string, string[], RegExp]> = [
      ['From: a@acme.test, b@acme.test\nTo: b@ok.test\nSubject: s\n\nx', ['b@ok.test'], /From/],
      ['To: b@ok.test\nSubject: s\n\nx', ['b@ok.test'], /From/],
      ['From: a@acme.test\nTo: undisclosed-recipients:;\nSubject: s\n\nx', ['b@ok.test'], /To/],
      ['From: a@acme.test\nTo: b@ok.test, c@ok.test\nSubject: s\n\nx', ['b@ok.test'], /c@ok\.test.*envelope/],
      ['From: a@acme.test\nTo: b@ok.test\nSubject: s\nX-Postgate-Bulk: yes\n\nx', ['b@ok.test'], /X-Postgate-Bulk/],
    ];
    for (const [raw, envelope, message] of cases) {
      const err = await map(raw, envelope).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, raw).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe('INVALID_REQUEST');
      expect((err as ApiError).message).toMatch(message);
    }
  });
});

describe('X-Postgate-Tracking', () => {
  it('turns open or click tracking on or off for the email and is not passed on', async () => {
    const req = await map('From: a@acme.test\nTo: b@ok.test\nSubject: s\nX-Postgate-Tracking: open=true; click=OFF\n\nx', ['b@ok.test']);
    expect(req.tracking).toEqual({ open: true, click: false });
    expect(req).not.toHaveProperty('headers');
    expect((await map('From: a@acme.test\nTo: b@ok.test\nSubject: s\nX-Postgate-Tracking: click=yes\n\nx', ['b@ok.test'])).tracking).toEqual({ click: true });
  });

  it('refuses anything else with a message that says how to write it', async () => {
    for (const value of ['open', 'open=maybe', 'opens=true', 'open=true click=false'])
      await expect(map(`From: a@acme.test\nTo: b@ok.test\nSubject: s\nX-Postgate-Tracking: ${value}\n\nx`, ['b@ok.test'])).rejects.toThrow(
        /X-Postgate-Tracking must be like/,
      );
  });
});
