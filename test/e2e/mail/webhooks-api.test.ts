// The webhooks API as Resend's SDK drives it, beside today's shape: {endpoint, events} and
// {url, statuses} on create, `object`/`signing_secret`/`status`/`events` in every answer, list
// pages, PATCH (URL through the SSRF guard, filter, enabled/disabled), secret rotation, and the
// top-level created_at of every message.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, sleep, type Project } from '../../helpers/stack.js';
import { verify } from '../../../control/webhooks/signature.js';

interface Received {
  path: string;
  headers: Record<string, string | undefined>;
  body: string;
  json: any;
}

let stack: Stack;
let p: Project;
let other: Project;
let server: http.Server;
let base: string;
const received: Received[] = [];
let n = 0;
const mail = (o: Record<string, unknown> = {}) => ({ from: 'api@hooksapi.test', to: `r${++n}@example.test`, subject: 'Hook API', text: 'x', ...o });

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ path: req.url!, headers: req.headers as Record<string, string>, body, json: JSON.parse(body) });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  stack = await Stack.start({ config: { webhooks: { retryDelays: [1], maxAgeSeconds: 3600, timeoutMs: 2000, allowCidrs: ['127.0.0.0/8'] } } });
  p = await stack.createProject('hooksapi');
  other = await stack.createProject('hooksother');
  await stack.verifyDomain('hooksapi', 'hooksapi.test');
  // The free plan's 60 requests a second would cut the quick series of calls below.
  await stack.setPlan('hooksapi', 'scale');
});
afterAll(async () => {
  await stack?.stop();
  server?.close();
});

const api = (method: string, path: string, body?: unknown, key = p.keys.live) => stack.api(method, path, key, body);

async function waitFor(pred: (r: Received) => boolean, timeoutMs = 15_000): Promise<Received> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const hit = received.find(pred);
    if (hit) return hit;
    await sleep(50);
  }
  throw new Error(`no webhook matched; got ${received.map((r) => `${r.path} ${r.json.type}`).join(', ')}`);
}
const about = (id: string) => (r: Received) => r.json.data?.email_id === id;

describe('creating', () => {
  it("accepts Resend's {endpoint, events} and answers with Resend's fields beside ours", async () => {
    const r = await api('POST', '/v1/webhooks', {
      endpoint: `${base}/resend`,
      events: ['email.sent', 'email.delivery_delayed', 'email.opened', 'user.created'],
    });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      object: 'webhook',
      id: expect.any(String),
      url: `${base}/resend`,
      endpoint: `${base}/resend`,
      statuses: ['sent', 'deferred', 'opened', 'user.created'],
      events: ['email.sent', 'email.delivery_delayed', 'email.opened', 'user.created'],
      status: 'enabled',
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/=]{40,}$/),
      signing_secret: r.body.secret,
      created_at: expect.any(String),
    });
    // Today's shape still works; `statuses` takes auth event types too, and no filter lists every email event.
    const ours = await api('POST', '/v1/webhooks', { url: `${base}/ours`, statuses: ['queued', 'session.revoked'] });
    expect(ours.body).toMatchObject({ statuses: ['queued', 'session.revoked'], events: ['email.queued', 'session.revoked'], status: 'enabled' });
    const all = await api('POST', '/v1/webhooks', { url: `${base}/all` });
    expect(all.body.statuses).toEqual([]);
    expect(all.body.events).toEqual(expect.arrayContaining(['email.queued', 'email.sent', 'email.delivered', 'email.bounced', 'email.delivery_delayed']));
    expect(all.body.events).not.toContain('user.created');
    for (const id of [r.body.id, ours.body.id, all.body.id]) await api('DELETE', `/v1/webhooks/${id}`);
  });

  it.each([
    ['both url and endpoint', { url: 'https://a.example/x', endpoint: 'https://a.example/x' }, /url or endpoint, not both/],
    ['both statuses and events', { url: 'https://a.example/x', statuses: ['sent'], events: ['email.sent'] }, /statuses or events, not both/],
    ['an unknown event', { endpoint: 'https://a.example/x', events: ['email.sent', 'email.teleported'] }, /Unknown event "email.teleported"/],
    ['an unknown status', { url: 'https://a.example/x', statuses: ['exploded'] }, /./],
    ['no URL', { events: ['email.sent'] }, /url \(or endpoint\) is required/],
    ['an endpoint that is not http(s)', { endpoint: 'ftp://a.example/x', events: ['email.sent'] }, /endpoint must be an absolute http\(s\) URL/],
    ['an endpoint at a link-local address', { endpoint: 'http://169.254.169.254/latest', events: ['email.sent'] }, /endpoint must not point to/],
    ['an endpoint on localhost', { endpoint: 'http://localhost:8080/x' }, /endpoint must not point to localhost/],
    ['credentials in the URL', { url: 'https://u:p@a.example/x' }, /must not carry credentials/],
  ])('refuses %s: 400 INVALID_REQUEST, nothing registered', async (_what, body, message) => {
    const before = (await api('GET', '/v1/webhooks')).body.data.length;
    const r = await api('POST', '/v1/webhooks', body);
    expect([r.status, r.body.code]).toEqual([400, 'INVALID_REQUEST']);
    expect(r.body.error).toMatch(message);
    expect((await api('GET', '/v1/webhooks')).body.data).toHaveLength(before);
  });
});

describe('list, get, delete', () => {
  it("answer like Resend's, with today's keys kept; the list pages with limit, after and before", async () => {
    const ids: string[] = [];
    const secrets: string[] = [];
    for (const path of ['/l1', '/l2', '/l3']) {
      const created = (await api('POST', '/v1/webhooks', { url: `${base}${path}`, statuses: ['failed'] })).body;
      ids.push(created.id);
      secrets.push(created.secret);
    }
    const list = (await api('GET', '/v1/webhooks')).body;
    expect(list).toMatchObject({ object: 'list', has_more: false });
    expect(list.data.map((w: any) => w.id)).toEqual(ids);
    expect(list.data[0]).toMatchObject({
      object: 'webhook',
      id: ids[0],
      url: `${base}/l1`,
      endpoint: `${base}/l1`,
      statuses: ['failed'],
      events: ['email.failed'],
    });
    // As Resend's list: no signing secret in it (create and the single GET give it).
    for (const w of list.data) expect([w.secret, w.signing_secret]).toEqual([undefined, undefined]);

    const page = async (q: string) => {
      const r = await api('GET', `/v1/webhooks?${q}`);
      expect(r.status).toBe(200);
      return [r.body.data.map((w: any) => w.id), r.body.has_more];
    };
    expect(await page('limit=2')).toEqual([ids.slice(0, 2), true]);
    expect(await page(`limit=2&after=${ids[1]}`)).toEqual([[ids[2]], false]);
    expect(await page(`limit=1&before=${ids[2]}`)).toEqual([[ids[1]], true]);
    expect(await page(`before=${ids[1]}`)).toEqual([[ids[0]], false]);
    for (const bad of [`after=${ids[0]}&before=${ids[2]}`, 'limit=0', 'limit=101', 'after=no-such-hook', 'cursor=x']) {
      const r = await api('GET', `/v1/webhooks?${bad}`);
      expect([bad, r.status, r.body.code]).toEqual([bad, 400, 'INVALID_REQUEST']);
    }

    const one = (await api('GET', `/v1/webhooks/${ids[0]}`)).body;
    expect(one).toMatchObject({ object: 'webhook', id: ids[0], status: 'enabled', secret: secrets[0], signing_secret: secrets[0], deliveries: [] });
    // Another project sees none of them.
    expect((await api('GET', `/v1/webhooks/${ids[0]}`, undefined, other.keys.live)).status).toBe(404);
    expect((await api('DELETE', `/v1/webhooks/${ids[0]}`, undefined, other.keys.live)).status).toBe(404);
    expect((await api('GET', '/v1/webhooks', undefined, other.keys.live)).body).toEqual({ object: 'list', has_more: false, data: [] });

    for (const id of ids) expect((await api('DELETE', `/v1/webhooks/${id}`)).body).toEqual({ object: 'webhook', id, deleted: true });
    const again = await api('DELETE', `/v1/webhooks/${ids[0]}`);
    expect([again.status, again.body.code]).toEqual([404, 'NOT_FOUND']);
  });
});

describe('PATCH /v1/webhooks/:id', () => {
  it('refuses a new URL the SSRF guard refuses, bad fields, and other projects; the endpoint is left as it was', async () => {
    const hook = (await api('POST', '/v1/webhooks', { url: `${base}/patch-bad`, statuses: ['sent'] })).body;
    for (const [body, message] of [
      [{ endpoint: 'http://10.0.0.1/x' }, /endpoint must not point to a loopback, private/],
      [{ url: 'http://[::1]:9/x' }, /url must not point to/],
      [{ url: 'http://localhost:9/x' }, /localhost/],
      [{ url: 'gopher://a.example/' }, /absolute http\(s\) URL/],
      [{ url: `${base}/x`, endpoint: `${base}/y` }, /not both/],
      [{ events: ['email.sent'], statuses: ['sent'] }, /not both/],
      [{ events: ['email.nope'] }, /Unknown event/],
      [{ status: 'paused' }, /./],
      [{}, /./],
      [{ secret: 'whsec_mine' }, /./],
    ] as const) {
      const r = await api('PATCH', `/v1/webhooks/${hook.id}`, body);
      expect([JSON.stringify(body), r.status, r.body.code]).toEqual([JSON.stringify(body), 400, 'INVALID_REQUEST']);
      expect(r.body.error).toMatch(message);
    }
    const after = (await api('GET', `/v1/webhooks/${hook.id}`)).body;
    expect(after).toMatchObject({ url: `${base}/patch-bad`, statuses: ['sent'], status: 'enabled', secret: hook.secret });
    expect((await api('PATCH', `/v1/webhooks/${hook.id}`, { status: 'disabled' }, other.keys.live)).status).toBe(404);
    expect((await api('PATCH', '/v1/webhooks/no-such-hook', { status: 'disabled' })).status).toBe(404);
    await api('DELETE', `/v1/webhooks/${hook.id}`);
  });

  it('changes the filter, the status and the URL; a disabled endpoint gets nothing while an enabled one does', async () => {
    const hook = (await api('POST', '/v1/webhooks', { url: `${base}/a`, statuses: ['queued'] })).body;
    const witness = (await api('POST', '/v1/webhooks', { url: `${base}/witness`, statuses: ['queued', 'failed'] })).body;

    const off = await api('PATCH', `/v1/webhooks/${hook.id}`, { status: 'disabled' });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ object: 'webhook', id: hook.id, status: 'disabled', url: `${base}/a`, statuses: ['queued'] });
    const quiet = await api('POST', '/v1/emails', mail());
    await waitFor((r) => r.path === '/witness' && about(quiet.body.id)(r));
    await sleep(500);
    expect(received.filter((r) => r.path === '/a')).toEqual([]);

    // Enabled again, with Resend's names: only failures now.
    const on = await api('PATCH', `/v1/webhooks/${hook.id}`, { status: 'enabled', events: ['email.failed'] });
    expect(on.body).toMatchObject({ status: 'enabled', statuses: ['failed'], events: ['email.failed'] });
    const queued = await api('POST', '/v1/emails', mail());
    const failed = await api('POST', '/v1/emails', mail({ from: 'x@not-verified.test' }));
    const got = await waitFor((r) => r.path === '/a' && about(failed.body.id)(r));
    expect(got.json).toMatchObject({ type: 'email.failed', data: { status: 'failed' } });
    expect(verify(hook.secret, got.headers, got.body)).toBe(true);
    await waitFor((r) => r.path === '/witness' && about(queued.body.id)(r));
    await sleep(300);
    expect(received.filter((r) => r.path === '/a' && about(queued.body.id)(r))).toEqual([]);

    // A new URL (checked like a new endpoint) takes the next message.
    const moved = await api('PATCH', `/v1/webhooks/${hook.id}`, { endpoint: `${base}/c` });
    expect(moved.body).toMatchObject({ url: `${base}/c`, endpoint: `${base}/c`, statuses: ['failed'], status: 'enabled' });
    const next = await api('POST', '/v1/emails', mail({ from: 'y@not-verified.test' }));
    await waitFor((r) => r.path === '/c' && about(next.body.id)(r));
    expect(received.filter((r) => r.path === '/a' && about(next.body.id)(r))).toEqual([]);
    for (const id of [hook.id, witness.id]) await api('DELETE', `/v1/webhooks/${id}`);
  });
});

describe('messages', () => {
  it('carry created_at beside timestamp (the same instant), and are signed with the rotated secret once rotated', async () => {
    const hook = (await api('POST', '/v1/webhooks', { endpoint: `${base}/rotate`, events: ['email.queued'] })).body;
    const first = await api('POST', '/v1/emails', mail());
    const got = await waitFor((r) => r.path === '/rotate' && about(first.body.id)(r));
    expect(got.json.created_at).toBe(got.json.timestamp);
    expect(new Date(got.json.created_at).toISOString()).toBe(got.json.created_at);
    expect(Object.keys(got.json)).toEqual(['type', 'timestamp', 'created_at', 'data']);
    expect(verify(hook.secret, got.headers, got.body)).toBe(true);

    const rotated = await api('POST', `/v1/webhooks/${hook.id}/signing-secret/rotate`);
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ object: 'webhook', id: hook.id, signing_secret: expect.stringMatching(/^whsec_/), secret: rotated.body.signing_secret });
    expect(rotated.body.secret).not.toBe(hook.secret);
    expect((await api('GET', `/v1/webhooks/${hook.id}`)).body.secret).toBe(rotated.body.secret);
    const second = await api('POST', '/v1/emails', mail());
    const signed = await waitFor((r) => r.path === '/rotate' && about(second.body.id)(r));
    expect(verify(rotated.body.secret, signed.headers, signed.body)).toBe(true);
    expect(verify(hook.secret, signed.headers, signed.body)).toBe(false);
    expect((await api('POST', '/v1/webhooks/no-such-hook/signing-secret/rotate')).status).toBe(404);
    await api('DELETE', `/v1/webhooks/${hook.id}`);
  });
});
