// Queue files written in one piece (gateway/queue-file.ts) against Haraka's own send_email: for
// the same message and envelope both must write the same files (todo and bytes), one per
// recipient domain, save for ids and times; and the messages send_email would change are left
// to send_email.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { dataForm, keepsHeaders } from '../../gateway/queue-file.js';
import { lcg, piecesText } from '../helpers/seeded.js';

/** dataForm's answer as bytes (a string holds one byte per char). */
const bytes = (d: string | Buffer) => (typeof d === 'string' ? Buffer.from(d, 'latin1') : d);

const exec = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-qfile-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const HEAD = 'Message-ID: <m1@example.com>\r\nDate: Wed, 25 Nov 2026 10:00:00 +0000\r\nFrom: A <a@example.com>\r\nSubject: Hi\r\n';
const cases = [
  {
    name: 'a signed CRLF message',
    from: 'bounce+e1@example.com',
    to: ['x@dest.test'],
    raw: `DKIM-Signature: v=1; a=rsa-sha256;\r\n b=abc\r\n${HEAD}\r\nHello.\r\n`,
  },
  {
    name: 'bare LF line endings and no final line ending',
    from: 'a@example.com',
    to: ['x@dest.test'],
    raw: `${HEAD.replace(/\r\n/g, '\n')}\nline one\nline two`,
  },
  {
    name: 'lines that start with a dot, in the body and as the last line',
    from: 'a@example.com',
    to: ['x@dest.test'],
    raw: `${HEAD}\r\n.\r\n..two\r\n.leading\r\nmid . dot\r\n.`,
  },
  {
    name: 'recipients of two domains: one file each, in order',
    from: 'a@example.com',
    to: ['x@one.test', 'y@two.test', 'z@One.test'],
    raw: `${HEAD}\r\nbody\r\n`,
  },
  { name: 'UTF-8 text and a lone CR inside a line', from: 'a@example.com', to: ['x@dest.test'], raw: `${HEAD}\r\nGrüße, 東京 \r.not a line start\r\n` },
  { name: 'an empty body', from: '<>', to: ['x@dest.test'], raw: `${HEAD}\r\n` },
  {
    name: 'a stream (a message with attachments) of 300 kB to two domains',
    from: 'a@example.com',
    to: ['x@one.test', 'y@two.test'],
    raw: `${HEAD}Content-Type: text/plain\r\n\r\n${Array.from({ length: 4000 }, (_, i) => `${i % 7 ? '' : '.'}line ${i} ${'x'.repeat(64)}`).join('\r\n')}\r\n`,
    stream: true,
  },
];

describe('queue files written in one piece', () => {
  it('writes what Haraka’s send_email writes, file for file', async () => {
    const file = path.join(dir, 'cases.json');
    fs.writeFileSync(file, JSON.stringify(cases.map((c) => ({ ...c, raw: Buffer.from(c.raw).toString('base64') }))));
    const out = path.join(dir, 'out.json');
    await exec(process.execPath, ['--import', 'tsx', path.join(root, 'test/helpers/queue-file-oracle.ts'), dir, file, out], { cwd: root });
    const written = JSON.parse(fs.readFileSync(out, 'utf8')) as {
      cases: Array<{ haraka: Array<{ todo: Record<string, unknown>; data: string }>; ours: Array<{ todo: Record<string, unknown>; data: string }> }>;
      failure: string;
      leftInQueue: number;
      leftInBroken: number;
    };
    const results = written.cases;
    // A queue dir that cannot take the file: an error, and no file left anywhere.
    expect(written.failure).toMatch(/ENOENT/);
    expect(written.leftInQueue).toBe(0);
    expect(written.leftInBroken).toBe(0);
    expect(results).toHaveLength(cases.length);
    for (const [i, r] of results.entries()) {
      const decode = (ws: typeof r.ours) => ws.map((w) => ({ todo: w.todo, data: Buffer.from(w.data, 'base64').toString('utf8') }));
      expect(decode(r.ours), cases[i]!.name).toEqual(decode(r.haraka));
      expect(r.ours.length, cases[i]!.name).toBe(new Set(cases[i]!.to.map((t) => t.split('@')[1]!.toLowerCase())).size);
    }
    // The split: one.test's two recipients share a file, first as given.
    const split = results[3]!.ours.map((w) => (w.todo.rcpt_to as Array<{ original: string }>).map((a) => a.original));
    expect(split).toEqual([['x@one.test', 'z@One.test'], ['y@two.test']]);
    // DATA form on disk: dot-stuffed, CRLF, the Received line first.
    const dots = Buffer.from(results[2]!.ours[0]!.data, 'base64').toString('latin1');
    expect(dots).toMatch(/^Received: \(postgate\); DATE\r\nMessage-ID/);
    expect(dots.endsWith('\r\n..\r\n...two\r\n..leading\r\nmid . dot\r\n..\r\n')).toBe(true);
  });

  it('keeps bytes that are not UTF-8 exactly (DKIM signed them)', () => {
    const raw = Buffer.concat([Buffer.from(`${HEAD}\r\n`), Buffer.from([0xe9, 0x0a, 0x2e, 0xff, 0x0d, 0x0a])]);
    expect(bytes(dataForm(raw))).toEqual(Buffer.concat([Buffer.from(`${HEAD}\r\n`), Buffer.from([0xe9, 0x0d, 0x0a, 0x2e, 0x2e, 0xff, 0x0d, 0x0a])]));
  });

  it('gives a message already in DATA form back as the same bytes, and any other as the line-by-line rules make it', () => {
    const built = Buffer.from(`${HEAD}\r\nline one\r\n\r\nmid . dot\r\n`);
    expect(dataForm(built)).toBe(built);
    // Random messages of CR, LF, CRLF, dots and 8-bit bytes: the same bytes as the string rules give
    // (the one reading of DATA form: CRLF line ends, a line break at the end, leading dots doubled).
    const reference = (raw: Buffer) => {
      let s = raw.toString('latin1').replace(/(?<!\r)\n/g, '\r\n');
      if (!s.endsWith('\r\n')) s += s.endsWith('\r') ? '\n' : '\r\n';
      return Buffer.from(s.replace(/(^|\n)\./g, '$1..'), 'latin1');
    };
    const pieces = ['a', ' ', '.', '..', '\r', '\n', '\r\n', '\r\n.', '\xff', '\xe9\n'];
    const next = lcg(7);
    let same = 0;
    for (let t = 0; t < 20_000; t++) {
      const text = piecesText(next, pieces, 12);
      const raw = Buffer.from(text, 'latin1');
      const out = dataForm(raw);
      if (out === raw) same++;
      expect(bytes(out), JSON.stringify(text)).toEqual(reference(raw));
    }
    // Both ways were taken.
    expect(same).toBeGreaterThan(100);
    expect(same).toBeLessThan(19_000);
  });

  it('leaves to send_email the messages it would change: no Message-Id, an empty one, no Date, no header end', () => {
    expect(keepsHeaders(dataForm(Buffer.from(`${HEAD}\r\nbody\r\n`)))).toBe(true);
    expect(keepsHeaders(dataForm(Buffer.from('message-id : <a@b>\r\ndate: x\r\n\r\n')))).toBe(true);
    expect(keepsHeaders(dataForm(Buffer.from(`${HEAD.replace(/^Message-ID[^\n]*\n/, '')}\r\nbody\r\n`)))).toBe(false);
    expect(keepsHeaders(dataForm(Buffer.from(`${HEAD.replace('<m1@example.com>', '<>')}\r\nbody\r\n`)))).toBe(false);
    expect(keepsHeaders(dataForm(Buffer.from(`${HEAD.replace(/Date:[^\n]*\n/, '')}\r\nbody\r\n`)))).toBe(false);
    expect(keepsHeaders(dataForm(Buffer.from(HEAD)))).toBe(false);
    // A Message-Id only in the body is no header.
    expect(keepsHeaders(dataForm(Buffer.from('Date: x\r\n\r\nMessage-Id: <a@b>\r\n')))).toBe(false);
  });
});
