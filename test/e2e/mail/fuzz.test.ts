// Throws malformed JSON, wrong types, huge fields, bad addresses and header
// injection at every mail endpoint of the OpenAPI document: each answer is a
// 4xx with a code, never a 500, and nothing reaches the receiving server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Project } from '../../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, type MxSink } from '../../helpers/mx-sink.js';

let dns: DnsServer;
let sink: MxSink;
let stack: Stack;
let p: Project;

beforeAll(async () => {
  sink = await startMxSink();
  dns = await startDnsServer([
    { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test' },
    { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
  ]);
  stack = await Stack.start({ env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port) } });
  p = await stack.createProject('fuzz');
  await stack.setPlan('fuzz', 'scale', { rate: 1_000_000 });
  await stack.verifyDomain('fuzz', 'fuzz.test');
});
afterAll(async () => {
  await stack?.stop();
  await sink?.close();
  await dns?.close();
});

const CRLF = ['\r\nBcc: victim@inbox.test', '\nX-Injected: 1', '\r\n\r\nbody injection', '%0d%0aBcc: v@inbox.test'.replace(/%0d%0a/g, '\r\n')];
const good = { from: 'a@fuzz.test', to: 'someone@inbox.test', subject: 's', text: 't' };
const huge = 'x'.repeat(6 * 1024 * 1024);

/** Bodies that must all be refused by a route taking a send request. */
function badSendRequests(): unknown[] {
  const wrong: Record<string, unknown[]> = {
    from: [null, 12, true, {}, [], '', 'no-at-sign', '@inbox.test', 'a@', 'a@b', 'a b@fuzz.test', '<a@fuzz.test', 'a@fuzz..test', huge],
    to: [null, 12, true, {}, [], [[]], [1], '', 'no-at-sign', 'a@', huge, Array(51).fill('a@inbox.test')],
    subject: [null, 12, true, {}, [], huge],
    html: [null, 12, true, {}, [], huge],
    text: [null, 12, true, {}, [], huge],
    cc: [null, 'bad', [1], ['bad'], {}, [huge]],
    bcc: [null, 'bad', [1], ['bad'], {}],
    reply_to: [null, 12, 'bad', ['bad'], {}],
    tags: [null, 'a', [1], [''], {}, ['a\r\nb'], [{ name: 'a\r\nb', value: 'v' }], [{ name: 'a', value: '' }]],
    headers: [null, [], 'x', { 'X-A': 1 }, { 'X A': 'v' }, { '': 'v' }, { 'Content-Type': 'text/html' }, { 'dkim-signature': 'x' }],
    bulk: [null, 'yes', 1, {}],
  };
  const out: unknown[] = [null, 0, 'str', true, [], {}];
  for (const [f, values] of Object.entries(wrong)) for (const w of values) out.push({ ...good, [f]: w });
  for (const inj of CRLF) {
    out.push(
      { ...good, subject: `Hi${inj}` },
      { ...good, from: `a@fuzz.test${inj}` },
      { ...good, to: `someone@inbox.test${inj}` },
      { ...good, to: [`Name${inj} <someone@inbox.test>`] },
    );
    out.push(
      { ...good, cc: [`c@inbox.test${inj}`] },
      { ...good, reply_to: `r@inbox.test${inj}` },
      { ...good, headers: { 'X-A': `v${inj}` } },
      { ...good, headers: { [`X-A${inj}`]: 'v' } },
    );
    out.push({ ...good, from: `"Evil${inj}" <a@fuzz.test>` });
  }
  return out;
}

describe('fuzz', () => {
  it('every route of the OpenAPI document answers malformed input with a 4xx and a code', async () => {
    const doc = (await stack.api('GET', '/openapi.json', undefined)).body;
    const routes: Array<[string, string]> = [];
    // Pages people open (an emailed sign-in link): their refusals are HTML pages, as their answers are.
    const pages = new Set<string>();
    for (const [path, ops] of Object.entries<any>(doc.paths))
      for (const [m, op] of Object.entries<any>(ops)) {
        routes.push([m.toUpperCase(), path]);
        if (Object.values<any>(op.responses ?? {}).some((r) => r.content?.['text/html'] && !r.content['application/json']))
          pages.add(`${m.toUpperCase()} ${path}`);
      }
    expect(routes.length).toBeGreaterThanOrEqual(14);
    const raw = ['{', '{"from":', 'null', '[1,', '"\u0000"', '{"a":1}'.repeat(3), '\uFFFF', '{"__proto__":{"x":1}}'];
    let answers = 0;
    for (const [method, path] of routes) {
      const url = path.replace(/\{[^}]+\}/g, (m) => (m === '{email}' ? encodeURIComponent('nobody@inbox.test') : 'no-such-id'));
      const bodies: unknown[] =
        method === 'GET' || method === 'DELETE'
          ? [undefined]
          : [
              ...raw,
              ...(path === '/v1/emails' || path === '/v1/emails/batch'
                ? badSendRequests()
                : [null, 1, 'x', [], { name: 123 }, { url: 5 }, { name: '\r\n' }, { scheduled_at: 5 }, { scheduled_at: 'soon' }]),
            ];
      for (const body of bodies) {
        // The batch route gets each bad request as a one-item batch.
        const payload = path === '/v1/emails/batch' && !raw.includes(body as string) ? [body] : body;
        const r = await stack.api(
          method,
          url,
          p.keys.live,
          payload === undefined ? undefined : typeof payload === 'string' && raw.includes(payload) ? payload : JSON.stringify(payload),
        );
        answers++;
        expect(r.status, `${method} ${url} ${String(JSON.stringify(body)).slice(0, 120)}`).toBeLessThan(500);
        // A page's refusal may be a page (an unknown link) or, for a request its schema refuses, the JSON error.
        const page = pages.has(`${method} ${path}`) && /^text\/html/.test(r.headers.get('content-type') ?? '');
        if (r.status >= 400 && !page) expect(r.body.code, `${method} ${url}`).toEqual(expect.any(String));
        if (path === '/v1/emails' && method === 'POST') expect(r.status, JSON.stringify(body).slice(0, 120)).toBeGreaterThanOrEqual(400);
        if (path === '/v1/emails/batch' && r.status === 202)
          expect(
            r.body.data.every((x: any) => x.code),
            JSON.stringify(body).slice(0, 120),
          ).toBe(true);
      }
    }
    expect(answers).toBeGreaterThan(300);
  }, 120_000);

  it('wrong methods, unknown paths and odd headers are 4xx with a code', async () => {
    for (const [m, path] of [
      ['PUT', '/v1/emails'],
      ['PATCH', '/v1/domains'],
      ['GET', '/v1/emails/batch/x'],
      ['POST', '/v1/suppressions'],
    ]) {
      const r = await stack.api(m!, path!, p.keys.live, m === 'GET' ? undefined : '{}');
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      expect(r.body.code).toEqual(expect.any(String));
    }
    const r = await stack.api('POST', '/v1/emails', undefined, JSON.stringify(good), {
      authorization: 'Bearer \u00ff\u00fe',
      'x-service-key': 'x'.repeat(5000),
    });
    expect(r.status).toBe(401);
  });

  it('nothing reached the receiving server', async () => {
    await new Promise((r) => setTimeout(r, 1500));
    expect(sink.messages).toHaveLength(0);
  });
});
