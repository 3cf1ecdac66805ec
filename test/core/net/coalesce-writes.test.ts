// core/net/coalesce-writes.ts: replies written in one turn of the event loop leave in one write
// (pipelined SMTP replies), on a real socket pair.
import net from 'node:net';
import { setImmediate as turn } from 'node:timers/promises';
import { afterEach, expect, it } from 'vitest';
import { coalesceWrites } from '../../../core/net/coalesce-writes.js';

let server: net.Server | undefined;
afterEach(() => server?.close());

/** A connected pair: `a` on our side (coalesced), and the chunks the peer receives. */
async function pair(): Promise<{ a: net.Socket; chunks: string[] }> {
  const chunks: string[] = [];
  const accepted = new Promise<net.Socket>((resolve) => {
    server = net.createServer((s) => {
      s.setEncoding('utf8');
      s.on('data', (d: string) => chunks.push(d));
      resolve(s);
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const a = net.connect((server!.address() as net.AddressInfo).port, '127.0.0.1');
  a.setNoDelay(true);
  await new Promise((resolve) => a.once('connect', resolve));
  await accepted;
  coalesceWrites(a);
  return { a, chunks };
}

const until = async (ok: () => boolean) => {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 5));
};

/** Counts the socket's writes to the kernel (each _write or _writev is one). */
function countWrites(s: net.Socket): () => number {
  let n = 0;
  const raw = s as unknown as Record<'_write' | '_writev', (...args: unknown[]) => unknown>;
  for (const m of ['_write', '_writev'] as const) {
    const orig = raw[m].bind(s);
    raw[m] = (...args: unknown[]) => {
      n++;
      return orig(...args);
    };
  }
  return () => n;
}

it('three replies in one turn arrive as one chunk; a reply in a later turn is sent on its own', async () => {
  const { a, chunks } = await pair();
  const writes = countWrites(a);
  a.write('250 OK\r\n');
  a.write('250 Accepted\r\n');
  a.write('354 Go ahead\r\n');
  await until(() => chunks.join('').includes('354'));
  expect(chunks).toEqual(['250 OK\r\n250 Accepted\r\n354 Go ahead\r\n']);
  expect(writes()).toBe(1);
  await turn();
  a.write('221 Bye\r\n');
  await until(() => chunks.length === 2);
  expect(chunks[1]).toBe('221 Bye\r\n');
  expect(writes()).toBe(2);
  a.destroy();
});

it('end() flushes at once, and a socket destroyed before the next turn is left alone', async () => {
  const { a, chunks } = await pair();
  a.write('421 closing\r\n');
  a.end();
  await until(() => chunks.length > 0);
  expect(chunks.join('')).toBe('421 closing\r\n');
  const { a: b } = await pair();
  b.write('x');
  b.destroy();
  await turn();
});
