// control/http/linger.ts: an answer given before the request's body has all arrived (a 413) is
// followed by a lingering close: the client that is still sending reads the answer instead of a
// reset, and the connection closes once it stops sending. A real HTTP server and a raw client.
import http from 'node:http';
import net from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { LINGER_IDLE_MS, lingerOnClose } from '../../../control/http/linger.js';

let server: http.Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** A server that refuses every body at once with 413, closing the connection (as Fastify does), lingering. */
async function refusing(): Promise<number> {
  server = http.createServer((req, res) => {
    // Without it the client's next chunk meets a closed socket: EPIPE, the 413 unread.
    lingerOnClose(req.socket);
    res.writeHead(413, { connection: 'close', 'content-type': 'application/json' });
    res.end('{"code":"PAYLOAD_TOO_LARGE"}');
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

/** Sends a request announcing 8 MB and keeps writing 64 kB chunks for `sendMs`; answers what it read and how it ended. */
function upload(port: number, sendMs: number): Promise<{ answer: string; error: string; closedAfterMs: number }> {
  return new Promise((resolve) => {
    // Half-open allowed: like a client in the middle of an upload, it goes on sending after our FIN.
    const s = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let answer = '';
    let error = '';
    const start = Date.now();
    let stopped = 0;
    s.on('data', (d) => (answer += d.toString('latin1')));
    s.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    s.on('close', () => resolve({ answer, error, closedAfterMs: Date.now() - (stopped || start) }));
    s.on('connect', () => {
      s.write('POST /v1/emails HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 8388608\r\n\r\n');
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      const timer = setInterval(() => {
        if (Date.now() - start >= sendMs || s.destroyed) {
          clearInterval(timer);
          stopped = Date.now();
          if (!s.destroyed) s.end();
          return;
        }
        s.write(chunk);
      }, 5);
    });
  });
}

it('the client still sending reads the 413, and the connection closes soon after it stops', async () => {
  const r = await upload(await refusing(), 300);
  expect(r.answer).toMatch(/^HTTP\/1\.1 413 /);
  expect(r.answer).toContain('PAYLOAD_TOO_LARGE');
  expect(r.error).toBe('');
  expect(r.closedAfterMs).toBeLessThan(LINGER_IDLE_MS * 3 + 500);
});

it('a socket already gone is left alone', () => {
  const s = new net.Socket();
  s.destroy();
  const before = s.destroySoon;
  lingerOnClose(s);
  lingerOnClose(null);
  expect(s.destroySoon).toBe(before);
});
