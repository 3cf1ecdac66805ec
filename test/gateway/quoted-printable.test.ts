// gateway/quoted-printable.ts writes a text part's quoted-printable in one pass; nodemailer's QP
// encoder stream (what the composer uses) is the oracle, on typical texts and on random ones built
// from the characters its line wrapping decides on (spaces and punctuation, '=', hex digits, CR and
// LF, multi-byte UTF-8).
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import * as qp from 'nodemailer/lib/qp';
import { encodeTextQp, wrap } from '../../gateway/quoted-printable.js';
import { seeded } from '../helpers/seeded.js';

async function oracle(text: string): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of Readable.from([Buffer.from(text, 'utf8')]).pipe(new qp.Encoder())) chunks.push(Buffer.from(c as Buffer));
  return Buffer.concat(chunks).toString('latin1');
}

const ALPHABET = ['a', 'b', 'Z', ' ', ' ', '\t', '.', ',', '!', '?', '=', '3', 'D', 'f', '\r', '\n', '\r\n', 'é', '€', '😀', 'ü', '\u0001', '-', 'x'];

describe('quoted-printable for text parts', () => {
  const typical: Array<[string, string]> = [
    ['empty', ''],
    ['short ASCII', 'Thanks for your order.'],
    [
      'LF lines over 76 characters',
      Array.from({ length: 50 }, (_, i) => `Line ${i} of a longer body: the order, the items, the totals and the small print.`).join('\n'),
    ],
    ['CRLF lines over 76 characters', `${'word '.repeat(40)}\r\n`.repeat(20)],
    ['a run without break characters', 'x'.repeat(1000)],
    [
      'HTML with attributes',
      `<table style="width:100%;border:0" cellpadding="0">${'<tr><td class="item">Widget</td><td align="right">€5.00</td></tr>'.repeat(30)}</table>`,
    ],
    ['German and emoji', 'Grüße aus Köln 🎉 — schöne Feiertage! '.repeat(30)],
    ['trailing spaces and tabs', 'end of line  \r\nnext\t\nlast \t'],
    ['over 64 kB', `${'The quick brown fox jumps over the lazy dog; = signs and ümlauts. '.repeat(1100)}`],
  ];
  for (const [name, text] of typical) {
    it(`writes what nodemailer's encoder writes: ${name}`, async () => {
      expect(encodeTextQp(text)).toBe(await oracle(text));
    });
  }

  it('writes what nodemailer writes for 2,000 random texts', async () => {
    const next = seeded(20261126);
    for (let n = 0; n < 2000; n++) {
      const length = Math.floor(next() * (n % 10 === 0 ? 2000 : 300));
      let text = '';
      while (text.length < length) text += ALPHABET[Math.floor(next() * ALPHABET.length)];
      const got = encodeTextQp(text);
      const want = await oracle(text);
      if (got !== want) expect({ n, text, got }).toEqual({ n, text, got: want });
    }
  });

  it('wraps as nodemailer wraps, at other line lengths too', () => {
    const next = seeded(7);
    for (let n = 0; n < 2000; n++) {
      let text = '';
      const length = Math.floor(next() * 400);
      while (text.length < length) text += ['a', ' ', '.', '=', '=C3', '=A9', '=3D', '\r\n', '\n', 'F', '9'][Math.floor(next() * 11)];
      for (const lineLength of [76, 20, 5]) {
        const want = qp.wrap(text, lineLength);
        if (wrap(text, lineLength) !== want) expect({ n, lineLength, text, got: wrap(text, lineLength) }).toEqual({ n, lineLength, text, got: want });
      }
    }
  });
});
