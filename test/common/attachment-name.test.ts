// The name of an attachment as a mail client shows it (common/attachment-name.ts): encoded words
// decoded as clients decode them (mailparser is the oracle), and the rules the shown name is
// judged by: invisible and compatibility characters, bidi overrides, NTFS streams.
import MailComposer from 'nodemailer/lib/mail-composer';
import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { decodeEncodedWords, nameProblem, refusedExtension, writableName } from '../../common/attachment-name.js';

/** The name mailparser shows for an attachment nodemailer wrote under `name` (nodemailer as it is, no rules of ours). */
async function shownByMailparser(name: string): Promise<string | undefined> {
  const raw = await new MailComposer({ from: 'a@b.test', to: 'c@d.test', text: 'x', attachments: [{ filename: name, content: 'x' }] }).compile().build();
  return (await simpleParser(raw)).attachments[0]?.filename;
}

describe('decodeEncodedWords', () => {
  const cases: Array<[string, string]> = [
    ['=?utf-8?B?ZXZpbC5leGU=?=', 'evil.exe'],
    ['report =?utf-8?B?ZXZpbC5leGU=?=', 'report evil.exe'],
    ['=?UTF-8?Q?evil=2Eexe?=', 'evil.exe'],
    ['=?utf-8?q?my_evil.exe?=', 'my evil.exe'],
    // Adjacent words: the white space between them dropped, a character split between two decoded whole.
    ['=?utf-8?B?ZXZp?= =?utf-8?B?bC5leGU=?=', 'evil.exe'],
    ['=?utf-8?Q?r=C3?=\r\n =?utf-8?Q?=A9sum=C3=A9.pdf?=', 'résumé.pdf'],
    ['=?iso-8859-1?Q?r=E9sum=E9.pdf?=', 'résumé.pdf'],
    ['=?utf-8*en?Q?evil.exe?=', 'evil.exe'],
    ['a =?utf-8?Q?b?= c', 'a b c'],
    ['résumé.pdf', 'résumé.pdf'],
    ['a=?b.pdf', 'a=?b.pdf'],
    // A charset nothing reads stays as it is (and nameProblem refuses it).
    ['=?x-unknown?B?ZXZpbC5leGU=?=', '=?x-unknown?B?ZXZpbC5leGU=?='],
  ];
  it('decodes B and Q words as a mail client shows them', async () => {
    for (const [input, want] of cases) expect(decodeEncodedWords(input), input).toBe(want);
  });

  it('agrees with mailparser on what nodemailer writes for the name (what a receiver shows)', async () => {
    for (const [input] of cases.filter(([i]) => !i.includes('x-unknown') && !/\r\n/.test(i)))
      expect(await shownByMailparser(input), input).toBe(decodeEncodedWords(input));
  });
});

describe('the rules a shown name is judged by', () => {
  it('refuses a refused extension however it is disguised', () => {
    for (const [name, ext] of [
      ['evil.exe', 'exe'],
      ['a.ｅｘｅ', 'exe'], // fullwidth letters (NFKC)
      ['a．exe', 'exe'], // fullwidth full stop
      ['evil.ex\u200be', 'exe'], // zero-width space
      ['evil.exe\u200d', 'exe'], // zero-width joiner at the end
      ['evil\u00ad.scr', 'scr'], // soft hyphen
      ['evil.e\ufeffxe', 'exe'], // BOM
      ['evil.exe\u200f', 'exe'], // right-to-left mark
      ['a.exe::$DATA', 'exe'], // NTFS main stream
      ['a.exe:Zone.Identifier', 'exe'],
      ['a.exe. ::$DATA', 'exe'],
      ['a.exe.', 'exe'],
      ['a.exe . .', 'exe'],
      ['a.exe\u3000', 'exe'], // ideographic space, dropped as Windows drops spaces
      ['RUN.BAT', 'bat'],
    ] as const)
      expect(refusedExtension(name), JSON.stringify(name)).toBe(ext);
    for (const name of ['notes.exe.txt', 'résumé.pdf', 'a.pdf:x', 'exe', 'photo.jpeg', 'a.pdf.']) expect(refusedExtension(name), name).toBeUndefined();
  });

  it('refuses bidi overrides, left-over encoded words, control characters and paths', () => {
    expect(nameProblem('\u202eexe.doc')).toMatch(/bidi override/); // shown as "cod.exe"
    expect(nameProblem('photo\u202egnp.pdf')).toMatch(/bidi override/);
    expect(nameProblem('a\u2066b.pdf')).toMatch(/bidi override/);
    expect(nameProblem('=?x-unknown?B?ZXZpbC5leGU=?=')).toMatch(/encoded word/);
    // Decoded once, an encoded word inside another is still one: a client that decodes twice would show evil.exe.
    expect(nameProblem(decodeEncodedWords('=?utf-8?B?PT91dGYtOD9CP1pYWnBiQzVsZUdVPT89?='))).toMatch(/encoded word/);
    expect(nameProblem('a\r\nX-Evil: 1.pdf')).toMatch(/control characters/);
    expect(nameProblem('a\u0085b.pdf')).toMatch(/control characters/);
    expect(nameProblem('..／..／etc／passwd')).toMatch(/not a path/);
    expect(nameProblem('a\\b.pdf')).toMatch(/not a path/);
    expect(nameProblem('\u200b\u200b')).toMatch(/non-empty/);
    for (const ok of ['résumé.pdf', 'مستند.pdf', 'نامه\u200cها.pdf', '履歴書.pdf', 'a "quoted"; b.pdf', 'x=?.pdf']) expect(nameProblem(ok), ok).toBeUndefined();
  });
});

describe('writableName (the gateway writes only names the rules allow)', () => {
  it('a stored name is written as it is shown, or not at all when the shown name is refused', () => {
    expect(writableName('résumé.pdf')).toBe('résumé.pdf');
    expect(writableName('=?utf-8?B?cmVwb3J0LnBkZg==?=')).toBe('report.pdf');
    expect(writableName('=?utf-8?B?ZXZpbC5leGU=?=')).toBeUndefined();
    expect(writableName('report =?utf-8?B?ZXZpbC5leGU=?=')).toBeUndefined();
    expect(writableName('\u202eexe.doc')).toBeUndefined();
    expect(writableName('')).toBeUndefined();
  });
});
