// Our in-memory DKIM signer (gateway/dkim-relaxed.cjs) against an independent implementation:
// every signature must verify with mailauth's verifier, and the body hash must equal the one
// mailauth's own signer computes, over messages that exercise each canonicalization rule.
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { lcg, piecesText } from '../helpers/seeded.js';

const require = createRequire(import.meta.url);
type Verified = { results: Array<{ status: { result: string } }> };
const { dkimVerify } = require('mailauth/lib/dkim/verify') as { dkimVerify(m: Buffer, o: { resolver: unknown }): Promise<Verified> };
const { dkimSign } = require('mailauth/lib/dkim/sign') as { dkimSign(m: Buffer, o: unknown): Promise<{ signatures: string }> };
const { signRelaxed, relaxedHeader, relaxedBodyHash, canonicalLines } = require('../../gateway/dkim-relaxed.cjs') as {
  relaxedHeader(line: string): string;
  relaxedBodyHash(body: string): string;
  canonicalLines(body: string): boolean;
  signRelaxed(raw: Buffer, o: { domain: string; selector: string; privateKey: crypto.KeyObject; headerList: string; overSign?: string[]; time?: Date }): string;
};
const { SIGNED_HEADERS } = require('../../gateway/dkim-sign.cjs') as { SIGNED_HEADERS: string };

const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const txt = `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;
const resolver = async (name: string, type: string) => {
  if (type === 'TXT' && name === 'pg1._domainkey.acme.test') return [[txt]];
  const err = new Error('not found') as Error & { code: string };
  err.code = 'ENOTFOUND';
  throw err;
};

const headers = [
  'From: Acme <hello@acme.test>',
  'To: r@inbox.test',
  'Subject: Your receipt',
  'Date: Wed, 25 Nov 2026 10:00:00 +0000',
  'Message-ID: <abc@acme.test>',
  'MIME-Version: 1.0',
  'Content-Type: text/plain; charset=utf-8',
  'Content-Transfer-Encoding: 7bit',
].join('\r\n');

const cases: Array<[string, string]> = [
  ['a plain message', `${headers}\r\n\r\nHello there.\r\nSecond line.\r\n`],
  ['whitespace runs, trailing whitespace and tabs', `${headers}\r\n\r\nHello  \t there. \t\r\n  indented\t\r\n\r\nend\r\n`],
  ['trailing empty lines', `${headers}\r\n\r\nbody\r\n\r\n\r\n\r\n`],
  ['an empty body', `${headers}\r\n\r\n`],
  ['no line break at the end', `${headers}\r\n\r\nlast line without CRLF`],
  [
    'folded and repeated headers, odd spacing around colons',
    `From:   Acme   <hello@acme.test>\r\nTo: a@inbox.test,\r\n\tb@inbox.test\r\nSubject : A  long\r\n   subject\r\nX-Other: kept\r\nReferences: <x@y>\r\nReferences: <z@y>\r\nDate: Wed, 25 Nov 2026 10:00:00 +0000\r\nList-Unsubscribe: <https://u.test/x>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\nFeedback-ID: p:transactional:postgate\r\n\r\nbody\r\n`,
  ],
  ['8-bit header and body bytes', `${headers}\r\nSubject: Grüße\r\n\r\nGrüße aus Köln\r\n`],
  [
    'a multipart body',
    `${headers.replace('text/plain; charset=utf-8', 'multipart/alternative; boundary="b1"')}\r\n\r\n--b1\r\nContent-Type: text/plain\r\n\r\nhi\r\n--b1--\r\n`,
  ],
];

describe('signRelaxed', () => {
  for (const [name, message] of cases) {
    it(`verifies with mailauth and hashes the body as mailauth does: ${name}`, async () => {
      const raw = Buffer.from(message, 'utf8');
      const header = signRelaxed(raw, { domain: 'acme.test', selector: 'pg1', privateKey, headerList: SIGNED_HEADERS, overSign: ['From', 'Subject', 'To'] });
      expect(header).toMatch(/^DKIM-Signature: v=1; a=rsa-sha256; c=relaxed\/relaxed; d=acme\.test;/);
      for (const line of header.split('\r\n')) expect(line.length).toBeLessThanOrEqual(78);
      const signed = Buffer.concat([Buffer.from(header, 'latin1'), raw]);
      const result = await dkimVerify(signed, { resolver });
      expect(result.results[0]?.status.result, JSON.stringify(result.results[0]?.status)).toBe('pass');

      const theirs = await dkimSign(raw, {
        canonicalization: 'relaxed/relaxed',
        headerList: SIGNED_HEADERS,
        signatureData: [{ signingDomain: 'acme.test', selector: 'pg1', privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) }],
      });
      const bh = (h: string) => /bh=([^;]+);/.exec(h.replace(/\r\n\s+/g, ''))?.[1];
      expect(bh(header)).toBe(bh(theirs.signatures));
    });
  }

  it('fails verification when a signed header or the body changes, or a second From is added', async () => {
    const raw = Buffer.from(cases[0]![1]);
    const header = signRelaxed(raw, { domain: 'acme.test', selector: 'pg1', privateKey, headerList: SIGNED_HEADERS, overSign: ['From', 'Subject', 'To'] });
    const verify = async (m: string) => (await dkimVerify(Buffer.from(header + m, 'latin1'), { resolver })).results[0]?.status.result;
    expect(await verify(cases[0]![1])).toBe('pass');
    // (mailauth calls a body that no longer matches its hash 'neutral', a header that changed 'fail'.)
    expect(await verify(cases[0]![1].replace('Your receipt', 'Your receipt!'))).toBe('fail');
    expect(await verify(cases[0]![1].replace('Second line.', 'Second line!'))).not.toBe('pass');
    expect(await verify(`From: Evil <evil@evil.test>\r\n${cases[0]![1]}`)).toBe('fail');
    // Whitespace that relaxed canonicalization ignores does not break it.
    expect(await verify(cases[0]![1].replace('Second line.', 'Second   line.  '))).toBe('pass');
  });

  it('names every signed header once per occurrence, over-signs From, Subject and To, and signs nothing it was not asked to', () => {
    const raw = Buffer.from(cases[5]![1]);
    const header = signRelaxed(raw, { domain: 'acme.test', selector: 'pg1', privateKey, headerList: SIGNED_HEADERS, overSign: ['From', 'Subject', 'To'] });
    const h = /;\s*h=([^;]+);/
      .exec(header.replace(/\r\n\s+/g, ' '))![1]!
      .split(':')
      .map((s) => s.trim().toLowerCase());
    const count = (n: string) => h.filter((x) => x === n).length;
    expect(count('from')).toBe(2);
    expect(count('subject')).toBe(2);
    expect(count('to')).toBe(2);
    expect(count('references')).toBe(2);
    expect(count('list-unsubscribe-post')).toBe(1);
    expect(count('feedback-id')).toBe(1);
    expect(count('x-other')).toBe(0);
  });

  it('takes only spaces and tabs as whitespace in a header (RFC 6376 §3.4.2), not the 0xA0 that ends a UTF-8 à', () => {
    expect(relaxedHeader('Subject :  a \t b \t')).toBe('subject:a b');
    const latin1 = Buffer.from('Subject: voilà', 'utf8').toString('latin1');
    expect(relaxedHeader(latin1)).toBe(`subject:${latin1.slice('Subject: '.length)}`);
  });
});

/** RFC 6376 §3.4.4 read line by line, as the signer once did it: the reference the whole-body passes must equal. */
function lineByLine(body: string): string {
  const hash = crypto.createHash('sha256');
  const lines = body.split('\n').map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l).replace(/[ \t]+/g, ' ').replace(/ $/, ''));
  let end = lines.length;
  while (end > 0 && lines[end - 1] === '') end--;
  for (let i = 0; i < end; i++) hash.update(`${lines[i]}\r\n`, 'latin1');
  return hash.digest('base64');
}

describe('relaxedBodyHash', () => {
  it('equals the line-by-line reading for any mix of spaces, tabs, CR, LF and text', () => {
    const pieces = ['a', 'b', ' ', '  ', '\t', '\r', '\n', '\r\n', '\xa0', '.'];
    const next = lcg(12345);
    let shortcut = 0;
    for (let t = 0; t < 20_000; t++) {
      const body = piecesText(next, pieces, 14);
      if (canonicalLines(body)) shortcut++;
      expect(relaxedBodyHash(body), JSON.stringify(body)).toBe(lineByLine(body));
    }
    // Bodies with nothing to change but their empty lines at the end skip the replaces: both ways were taken.
    expect(shortcut).toBeGreaterThan(500);
    for (const body of ['', '\r\n', '\r\n\r\n', 'x', 'x\r', ' x \t y \r\n\r\n \r\n', 'a\rb\n', 'a \r \r\n', 'a=\r\n b\r\n\r\n', 'a\r\r\n', '\n'])
      expect(relaxedBodyHash(body), JSON.stringify(body)).toBe(lineByLine(body));
  });
});
