// The file path of messages with attachments (gateway/spool.ts): the DATA form Haraka's
// stream input expects, whatever the chunk boundaries, and the stream of signature + file.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { DataLines, queueStream, Slots } from '../../gateway/spool.js';

const collect = async (r: Readable): Promise<string> => {
  const chunks: Buffer[] = [];
  for await (const c of r) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks).toString('latin1');
};
const through = (chunks: string[]) => collect(Readable.from(chunks.map((c) => Buffer.from(c, 'latin1'))).pipe(new DataLines()));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-spool-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('DataLines', () => {
  const message = 'Subject: x\r\n\r\n.leading dot\r\nbare\nline\r\n..two\r\nlast';
  const expected = 'Subject: x\r\n\r\n..leading dot\r\nbare\r\nline\r\n...two\r\nlast\r\n';

  it('doubles a leading dot, ends every line with CRLF and the last line too, at any chunk boundary', async () => {
    expect(await through([message])).toBe(expected);
    for (let cut = 1; cut < message.length; cut++) expect(await through([message.slice(0, cut), message.slice(cut)]), `cut at ${cut}`).toBe(expected);
    expect(await through(message.split(''))).toBe(expected);
  });

  it('leaves a message that ends with CRLF as it is, and an empty one empty', async () => {
    expect(await through(['a\r\n', 'b\r', '\n'])).toBe('a\r\nb\r\n');
    expect(await through(['a\r'])).toBe('a\r\n');
    expect(await through([])).toBe('');
  });
});

describe('queueStream', () => {
  it('streams the signature, then the file, as DATA lines', async () => {
    const file = path.join(dir, 'm.eml');
    fs.writeFileSync(file, `From: a@b.test\r\n\r\n${'x'.repeat(300_000)}\r\n.\r\nend`);
    const out = await collect(queueStream(Buffer.from('DKIM-Signature: v=1\r\n'), file));
    expect(out).toBe(`DKIM-Signature: v=1\r\nFrom: a@b.test\r\n\r\n${'x'.repeat(300_000)}\r\n..\r\nend\r\n`);
  });

  it('fails, instead of ending short, when the file cannot be read', async () => {
    await expect(collect(queueStream(Buffer.alloc(0), path.join(dir, 'missing.eml')))).rejects.toThrow(/ENOENT/);
  });
});

describe('Slots', () => {
  it('lets n holders through at once; a freed slot goes to the next in line', async () => {
    const slots = new Slots(2);
    const a = await slots.take();
    const b = await slots.take();
    let third = false;
    const c = slots.take().then((release) => {
      third = true;
      return release;
    });
    await new Promise((r) => setImmediate(r));
    expect(third).toBe(false);
    a();
    a(); // a second release of the same slot is ignored
    (await c)();
    b();
    const all = await Promise.all([slots.take(), slots.take()]);
    expect(all).toHaveLength(2);
  });
});
