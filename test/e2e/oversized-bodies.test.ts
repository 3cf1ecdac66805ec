// A body over a route's limit is answered 413 before it has all arrived. The client, still
// sending, must be able to read that answer: control reads and throws away the rest for a while
// (a lingering close) instead of closing at once, which made the kernel reset the connection
// and discard the answer (the client saw EPIPE). The client here sends its whole request before
// it reads anything, as most HTTP clients do.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Project } from '../helpers/stack.js';

let stack: Stack;
let p: Project;
let port: number;

beforeAll(async () => {
  stack = await Stack.start();
  port = Number(stack.env.POSTGATE_HTTP_PORT);
  p = await stack.createProject('oversized');
});
afterAll(async () => {
  await stack?.stop();
});

interface Sent {
  /** What came back, read only after the whole request was written (or writing failed). */
  text: string;
  writeError: string | undefined;
}

/** Writes `head` then `body` in 64 kB pieces a few ms apart, reading nothing until done; then reads what came back. */
function sendThenRead(head: string, body: Buffer): Promise<Sent> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.pause();
    let writeError: string | undefined;
    s.on('error', (err: NodeJS.ErrnoException) => {
      writeError ??= err.code;
    });
    const read = () => {
      let text = '';
      s.on('data', (c) => (text += c.toString('latin1')));
      s.resume();
      const finish = () => {
        clearTimeout(timer);
        s.destroy();
        resolve({ text, writeError });
      };
      const timer = setTimeout(finish, 3000);
      s.on('close', finish);
      s.on('end', finish);
    };
    s.write(head);
    let offset = 0;
    const next = () => {
      if (offset >= body.length || s.destroyed) return read();
      const piece = body.subarray(offset, offset + 64 * 1024);
      offset += piece.length;
      s.write(piece, (err) => (err ? read() : setTimeout(next, 3)));
    };
    next();
  });
}

const answer = (text: string) => {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
  const length = Number(/\r\ncontent-length: (\d+)/i.exec(text)?.[1]);
  const body = text.slice(text.indexOf('\r\n\r\n') + 4).slice(0, length);
  return { status, json: body ? JSON.parse(body) : undefined };
};

const MB = 'x'.repeat(1024 * 1024);

describe('an oversized body is answered 413, and the client reads it', () => {
  const routes: Array<[string, string, () => Record<string, string>, Record<string, string>]> = [
    ['hosted email-otp/send', '/api/v1/auth/hosted/email-otp/send', () => ({}), { slug: MB, email: MB, redirectUri: MB }],
    ['verify-token', '/api/v1/auth/verify-token', () => ({ 'X-Service-Key': p.keys.live }), { provider: MB, method: MB, credential: MB }],
    ['sms-otp/verify', '/api/v1/auth/sign-in/sms-otp/verify', () => ({ 'X-Service-Key': p.keys.live }), { phone: MB, code: MB }],
  ];

  it.each(routes)('%s, every string field 1 MB, with a Content-Length', async (_name, path, headers, fields) => {
    const body = Buffer.from(JSON.stringify(fields));
    const extra = Object.entries(headers())
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    const r = await sendThenRead(`POST ${path} HTTP/1.1\r\nHost: x\r\n${extra}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`, body);
    expect(r.writeError).toBeUndefined();
    const { status, json } = answer(r.text);
    expect(status).toBe(413);
    expect(json).toEqual({
      error: 'Request body is too large',
      code: 'PAYLOAD_TOO_LARGE',
      name: 'payload_too_large',
      message: 'Request body is too large',
      statusCode: 413,
    });
    expect(r.text).toMatch(/\r\nconnection: close\r\n/i);
  });

  it('the same when the body is chunked (refused once the limit is passed, mid-body)', async () => {
    const json = Buffer.from(JSON.stringify({ email: MB.repeat(2) }));
    const chunks: Buffer[] = [];
    for (let i = 0; i < json.length; i += 32 * 1024) {
      const piece = json.subarray(i, i + 32 * 1024);
      chunks.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
    }
    chunks.push(Buffer.from('0\r\n\r\n'));
    const r = await sendThenRead(
      `POST /api/v1/auth/sign-in/email-otp/send HTTP/1.1\r\nHost: x\r\nX-Service-Key: ${p.keys.live}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
      Buffer.concat(chunks),
    );
    expect(r.writeError).toBeUndefined();
    expect(answer(r.text)).toMatchObject({ status: 413, json: { code: 'PAYLOAD_TOO_LARGE' } });
  });

  it('a client that stops sending after the answer is let go of soon (the lingering is bounded)', async () => {
    const t0 = Date.now();
    const closed = await new Promise<string>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      let text = '';
      s.on('data', (c) => (text += c.toString('latin1')));
      s.on('error', () => undefined);
      s.on('close', () => resolve(text));
      // Half a megabyte of a declared 50 MB, then silence; the socket left open.
      s.write(
        `POST /api/v1/auth/verify-token HTTP/1.1\r\nHost: x\r\nX-Service-Key: ${p.keys.live}\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n{"credential":"${'y'.repeat(512 * 1024)}`,
      );
    });
    expect(answer(closed).status).toBe(413);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect((await fetch(`${stack.url}/healthz`)).status).toBe(200);
  });
});
