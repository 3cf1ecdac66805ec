// What control defers of its dependencies' dependencies (mailparser's he, linkify-it,
// html-to-text and encoding-japanese; the docs plugins' yaml and glob) and esbuild (the widget's
// bundler) is not loaded by starting control or by reading messages as the SMTP door does, what
// is read is the same as with the real packages, and each still works once asked for.
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { PARSE } from '../../../control/smtp/message.js';
import { encodeHtml } from '../../../control/smtp/simple-message.js';
import { configureLater } from '../../../core/lazy-module.js';
import { seeded } from '../../helpers/seeded.js';
import { dist } from '../../../deploy/build.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const fromMailparser = createRequire(createRequire(import.meta.url).resolve('mailparser'));
const he = fromMailparser('he') as { encode(s: string, o?: object): string };
const linkifyIt = fromMailparser('linkify-it') as () => any;
const tlds = fromMailparser('tlds') as string[];
const crlf = (s: string) => Buffer.from(s.replace(/\r?\n/g, '\r\n'));

describe('deferred dependencies', () => {
  it('encodeHtml is he.encode with its default options', () => {
    const fixed = ['', 'plain ASCII 123', `"&'<>\``, 'Zoë Ünïcødé', '日本語', 'Bob 😀 🎉', '\x01\t\n\x0b\f\r\x1f\x7f\x80\x81\x8d\xa0', '\ud800 lone \udfff'];
    const rand = seeded(7);
    const alphabet = ['a', ' ', '&', '<', '"', "'", '`', '\x01', '\t', '\x7f', '\x81', '\x9d', '\xa0', 'é', '€', '\ud83d\ude00', '\ud800', 'z'];
    const random = Array.from({ length: 300 }, () =>
      Array.from({ length: 1 + Math.floor(rand() * 12) }, () => alphabet[Math.floor(rand() * alphabet.length)]).join(''),
    );
    for (const s of [...fixed, ...random]) expect(encodeHtml(s), JSON.stringify(s)).toBe(he.encode(s));
  });

  it('configureLater records the setup calls and makes the real instance on first use', async () => {
    let loads = 0;
    const make = configureLater(() => {
      loads++;
      return linkifyIt;
    }, ['tlds', 'add', 'set']) as () => any;
    const configure = (l: any) =>
      l
        .tlds(tlds)
        .tlds('onion', true)
        .add('@', { validate: (text: string, pos: number) => /^[a-z]+/.exec(text.slice(pos))?.[0].length ?? 0 });
    const lazy = configure(make());
    const real = configure(linkifyIt());
    expect(loads).toBe(0);
    const text = 'See example.com, http://x.onion/a, mail ann@acme.test and @someone; not a.b';
    expect(lazy.match(text)).toEqual(real.match(text));
    expect(lazy.test('nothing here')).toBe(false);
    expect(loads).toBe(1);
  });

  it("starting control and reading messages as the SMTP door does loads none of them; the results are mailparser's", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(root, 'test/helpers/lazy-deps-probe.mjs'), dist], { cwd: root });
    const p = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(p.loaded).toEqual([]);
    expect(p.afterSimple).toEqual([]);
    expect(p.afterMultipart).toEqual([]);
    // Asked for, yaml and esbuild load and work.
    expect(p.afterUse).toEqual(['esbuild', 'yaml']);
    expect(p.yamlText).toBe('a:\n  - 1\n');
    expect(p.widget).toBeGreaterThan(1000);

    // The same messages, read here by mailparser with the real he and linkify-it.
    const fields = (m: any) => JSON.parse(JSON.stringify({ from: m.from, to: m.to, text: m.text, html: m.html }));
    const simple = await simpleParser(
      crlf('From: "Zoë <&> Co" <ann@acme.test>\nTo: Bob 😀 <bob@inbox.test>, "O\'Neil" <o@inbox.test>\nSubject: Hi\n\nPlain text with example.com in it.\n'),
      PARSE,
    );
    expect(p.simple).toEqual(fields(simple));
    expect(p.simple.from.html).toContain('Zo&#xEB; &#x3C;&#x26;&#x3E; Co');
    const multipart = await simpleParser(
      crlf(
        'From: "Zoë <&> Co" <ann@acme.test>\nTo: Bob 😀 <bob@inbox.test>\nSubject: Hi\nMIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=b\n\n--b\nContent-Type: text/plain\n\nSee example.com\n--b\nContent-Type: text/html\n\n<p>See <b>example.com</b></p>\n--b--\n',
      ),
      PARSE,
    );
    expect(p.multipart).toEqual(fields(multipart));
  });
});
