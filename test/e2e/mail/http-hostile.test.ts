// Hostile HTTP over raw sockets: every error answer is {error, code} (also those Node's
// parser gives before Fastify sees the request), an unfinished body is cut off after the
// request timeout, and a Content-Length over the route's limit is refused before reading.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Project } from '../../helpers/stack.js';

let stack: Stack;
let p: Project;
let port: number;

beforeAll(async () => {
  // A 12 MB body budget: two unfinished 5 MB sends fit, a third does not.
  stack = await Stack.start({ config: { http: { requestTimeoutMs: 1500, headersTimeoutMs: 1000, inFlightBodyBytes: 12 * 1024 * 1024 } } });
  port = Number(stack.env.POSTGATE_HTTP_PORT);
  p = await stack.createProject('hostile');
});
afterAll(async () => {
  await stack?.stop();
});

/** Writes `data` (then nothing more, the socket left open) and resolves what comes back until the server closes, with the time it took. */
function raw(data: string | Buffer, timeoutMs = 8000): Promise<{ text: string; ms: number; closed: boolean }> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const s = net.connect(port, '127.0.0.1');
    let text = '';
    s.on('data', (c) => (text += c.toString('latin1')));
    const done = (closed: boolean) => {
      clearTimeout(timer);
      s.destroy();
      resolve({ text, ms: Date.now() - t0, closed });
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    s.on('close', () => done(true));
    s.on('error', () => undefined);
    s.write(data);
  });
}

const parse = (text: string) => {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
  const length = Number(/\r\ncontent-length: (\d+)/i.exec(text)?.[1]);
  const body = text.slice(text.indexOf('\r\n\r\n') + 4).slice(0, length);
  return { status, json: JSON.parse(body) };
};

describe('hostile HTTP', () => {
  it.each([
    ['a bad method', 'FOO\x01 / HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    ['NUL in a header', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n', 400],
    ['a 100 KB query', `GET /healthz?q=${'a'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431],
    ['malformed framing', 'POST /v1/emails HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', 400],
    [
      'a bad chunk size',
      () =>
        `POST /v1/webhooks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${p.keys.live}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n`,
      400,
    ],
    ['a bad URL encoding', 'GET /v1/emails/%E0%A4%A HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 400],
    ['an unknown route method', 'PROPFIND /v1/emails HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 404],
  ] as Array<[string, string | (() => string), number]>)('%s answers {error, code}', async (_name, request, status) => {
    const r = await raw(typeof request === 'function' ? request() : request);
    const { status: got, json } = parse(r.text);
    expect(got).toBe(status);
    // The one error shape: the spec's {error, code} and Resend's {name, message, statusCode}, nothing else.
    expect(Object.keys(json).sort()).toEqual(['code', 'error', 'message', 'name', 'statusCode']);
    expect((await fetch(`${stack.url}/healthz`)).status).toBe(200);
  });

  it('cuts off a body shorter than its Content-Length after the request timeout, with 408 {error, code}', async () => {
    const body = '{"from":"a@b.test"';
    const r = await raw(
      `POST /v1/emails HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${p.keys.live}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n${body}`,
    );
    expect(r.closed).toBe(true);
    expect(r.ms).toBeLessThan(6000);
    expect(parse(r.text)).toMatchObject({ status: 408, json: { code: 'REQUEST_TIMEOUT' } });
  });

  it('refuses a Content-Length over the route limit at once, without reading the body', async () => {
    const r = await raw(
      `POST /api/v1/auth/sign-in/email-otp/send HTTP/1.1\r\nHost: x\r\nX-Service-Key: ${p.keys.live}\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n{`,
      3000,
    );
    // Answered at once; closed after the lingering close's half second without another byte (control/http/linger.ts).
    expect(r.ms).toBeLessThan(1500);
    expect(parse(r.text)).toMatchObject({ status: 413, json: { code: 'PAYLOAD_TOO_LARGE' } });
  });

  it('holds request bodies to one budget over all connections: past it, 503 SERVER_BUSY at once, before reading', async () => {
    const rss = async () => Number(/postgate_process_rss_bytes (\d+)/.exec(await (await fetch(`${stack.url}/metrics`)).text())?.[1]);
    const before = await rss();
    const big = 5 * 1024 * 1024 - 1024;
    const head = `POST /v1/emails HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${p.keys.live}\r\nContent-Type: application/json\r\nContent-Length: ${big}\r\n\r\n`;
    // Twenty unfinished 5 MB bodies, each 1 MB in: the budget takes two; the others are refused at once.
    const attempts = Array.from({ length: 20 }, () => raw(`${head}{"x":"${'a'.repeat(1024 * 1024)}`, 6000));
    const results = await Promise.all(attempts);
    const refused = results.filter((r) => parse(r.text).status === 503);
    const timedOut = results.filter((r) => parse(r.text).status === 408);
    expect(refused.length).toBe(18);
    expect(timedOut.length).toBe(2);
    for (const r of refused) {
      expect(parse(r.text).json).toMatchObject({ error: 'Too many request bodies in flight; try again shortly', code: 'SERVER_BUSY' });
      expect(r.text).toMatch(/\r\nretry-after: 1\r\n/i);
    }
    const after = await rss();
    console.log(`control RSS before ${(before / 2 ** 20).toFixed(1)} MB, after 20 unfinished 5 MB bodies ${(after / 2 ** 20).toFixed(1)} MB`);
    // Given back: once they are answered, a send goes through again.
    const m = /postgate_http_body_bytes_in_flight (\d+)/.exec(await (await fetch(`${stack.url}/metrics`)).text());
    expect(Number(m?.[1])).toBe(0);
    const ok = await stack.api('POST', '/v1/emails', p.keys.live, { from: 'a@unverified.test', to: 'b@example.com', subject: 's', text: 't' });
    expect(ok.status).not.toBe(503);
  });

  it('reads large bodies a window at a time: the next waits its turn (1 s at most behind a stalled upload), small bodies never wait', async () => {
    const metric = async (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(await (await fetch(`${stack.url}/metrics`)).text())?.[1]);
    const send = (text: string) => {
      const body = JSON.stringify({ from: 'a@unverified.test', to: 'b@example.com', subject: 's', text });
      return `POST /v1/emails HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${p.keys.live}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
    };
    const waitsBefore = await metric('postgate_http_body_waits_total');
    // A 5 MB upload that stalls after its first megabyte holds the whole 4 MB window (http.activeBodyBytes).
    const stalled = raw(
      `POST /v1/emails HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${p.keys.live}\r\nContent-Type: application/json\r\nContent-Length: ${5 * 1024 * 1024}\r\n\r\n{"x":"${'a'.repeat(1024 * 1024)}`,
      6000,
    );
    await new Promise((r) => setTimeout(r, 200));
    expect(await metric('postgate_http_body_bytes_active')).toBe(5 * 1024 * 1024);
    // A small send (under 64 kB) is read at once; a 100 kB one waits, then is read after at most a second.
    const [small, large] = await Promise.all([raw(send('hello')), raw(send('b'.repeat(100_000)))]);
    expect(small.ms).toBeLessThan(700);
    expect(large.ms).toBeGreaterThanOrEqual(900);
    expect(large.ms).toBeLessThan(1400);
    // Both are answered as they would be without the wait (the sender's domain is not verified).
    const expected = parse(small.text).status;
    expect(expected).toBeGreaterThanOrEqual(400);
    expect(expected).toBeLessThan(500);
    expect(parse(large.text).status).toBe(expected);
    expect(await metric('postgate_http_body_waits_total')).toBe(waitsBefore + 1);
    expect(parse((await stalled).text).status).toBe(408);

    // A burst of six complete 1 MB sends: however many wait (that depends on how fast the first are answered), all are answered alike.
    const burst = await Promise.all(Array.from({ length: 6 }, () => raw(send('c'.repeat(1024 * 1024 - 200)))));
    for (const r of burst) expect(parse(r.text).status).toBe(expected);
    expect(await metric('postgate_http_body_bytes_active')).toBe(0);
    expect(await metric('postgate_http_body_bytes_in_flight')).toBe(0);
  });
});
