// Webhooks: registered endpoints receive signed status changes (Standard
// Webhooks), failures are retried, and pending deliveries survive a restart.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, sleep, type Project } from '../../helpers/stack.js';
import { verify } from '../../../control/webhooks/signature.js';

interface Received {
  headers: Record<string, string | undefined>;
  body: string;
  json: any;
}

let stack: Stack;
let p: Project;
let server: http.Server;
let url: string;
const received: Received[] = [];
let answer = 200;
let n = 0;
const mail = () => ({ from: 'hooks@hooks.test', to: `r${++n}@example.test`, subject: 'Hook me', text: 'x' });

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (answer === 200) received.push({ headers: req.headers as Record<string, string>, body, json: JSON.parse(body) });
      res.writeHead(answer).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hooks`;
  stack = await Stack.start({ config: { webhooks: { retryDelays: [1], maxAgeSeconds: 3600, timeoutMs: 2000, allowCidrs: ['127.0.0.0/8'] } } });
  p = await stack.createProject('hooks');
  await stack.verifyDomain('hooks', 'hooks.test');
});
afterAll(async () => {
  await stack?.stop();
  server?.close();
});

async function waitReceived(pred: (r: Received) => boolean, timeoutMs = 15_000): Promise<Received> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const hit = received.find(pred);
    if (hit) return hit;
    await sleep(50);
  }
  throw new Error(`no webhook matched; got ${received.map((r) => r.json.type).join(', ')}`);
}

describe('webhooks', () => {
  let hook: any;

  it('registers an endpoint and shows its signing secret', async () => {
    const r = await stack.api('POST', '/v1/webhooks', p.keys.live, { url, statuses: ['queued', 'failed', 'bounced'] });
    expect(r.status).toBe(201);
    hook = r.body;
    expect(hook).toMatchObject({
      id: expect.any(String),
      url,
      statuses: ['queued', 'failed', 'bounced'],
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/=]{40,}$/),
    });
    expect((await stack.api('GET', '/v1/webhooks', p.keys.live)).body.data).toHaveLength(1);
    for (const bad of [{ url: 'ftp://x.test/' }, { url: 'not a url' }, { url, statuses: ['exploded'] }, {}]) {
      const b = await stack.api('POST', '/v1/webhooks', p.keys.live, bad);
      expect(b.status).toBe(400);
      expect(b.body.code).toBe('INVALID_REQUEST');
    }
  });

  it('POSTs each status change with a status field, signed', async () => {
    const sent = await stack.api('POST', '/v1/emails', p.keys.live, mail());
    const got = await waitReceived((r) => r.json.data.email_id === sent.body.id && r.json.data.status === 'queued');
    expect(got.json).toMatchObject({
      type: 'email.queued',
      timestamp: expect.any(String),
      data: { status: 'queued', email_id: sent.body.id, subject: 'Hook me' },
    });
    expect(got.headers['webhook-id']).toMatch(/^msg_/);
    expect(verify(hook.secret, got.headers, got.body)).toBe(true);
    expect(verify(hook.secret, got.headers, got.body.replace('queued', 'sent'))).toBe(false);
    expect(verify(`whsec_${Buffer.alloc(32).toString('base64')}`, got.headers, got.body)).toBe(false);

    const refused = await stack.api('POST', '/v1/emails', p.keys.live, { ...mail(), from: 'x@nothere.test' });
    const failed = await waitReceived((r) => r.json.data.email_id === refused.body.id);
    expect(failed.json).toMatchObject({ type: 'email.failed', data: { status: 'failed', event: { code: 'DOMAIN_NOT_VERIFIED' } } });
  });

  it('retries a failing endpoint and delivers after a restart of the whole stack', async () => {
    answer = 500;
    const sent = await stack.api('POST', '/v1/emails', p.keys.live, mail());
    // Let it fail at least once (polled: a loaded machine may be slow), then stop everything while the delivery is pending.
    let view: any;
    let pending: any;
    for (const until = Date.now() + 20_000; Date.now() < until; await sleep(100)) {
      view = (await stack.api('GET', `/v1/webhooks/${hook.id}`, p.keys.live)).body;
      pending = view.deliveries.find((d: any) => d.status === 'pending' && d.attempt >= 1);
      if (pending) break;
    }
    expect(pending).toMatchObject({ attempt: expect.any(Number), last_error: 'HTTP 500' });
    expect(pending.attempt).toBeGreaterThanOrEqual(1);
    expect(await stack.stop()).toBe(0);
    answer = 200;
    await stack.boot();
    const got = await waitReceived((r) => r.json.data.email_id === sent.body.id && r.json.data.status === 'queued');
    expect(verify(hook.secret, got.headers, got.body)).toBe(true);
    // The sender records `delivered` once it has the answer, a moment after the receiver got the POST.
    await expect
      .poll(async () => (await stack.api('GET', `/v1/webhooks/${hook.id}`, p.keys.live)).body.deliveries.find((d: any) => d.id === pending.id).status)
      .toBe('delivered');
    // Delivered once: the same message id arrives once.
    expect(received.filter((r) => r.headers['webhook-id'] === got.headers['webhook-id'])).toHaveLength(1);
  });

  it('deleting an endpoint stops its deliveries', async () => {
    const del = await stack.api('DELETE', `/v1/webhooks/${hook.id}`, p.keys.live);
    expect(del.body).toEqual({ object: 'webhook', id: hook.id, deleted: true });
    const before = received.length;
    await stack.api('POST', '/v1/emails', p.keys.live, mail());
    await sleep(1200);
    expect(received.length).toBe(before);
    expect((await stack.api('GET', `/v1/webhooks/${hook.id}`, p.keys.live)).status).toBe(404);
  });
});
