// Code-mail abuse: the keyless hosted sign-in calls must come from a browser page on an
// allowed origin, a project's code sends are capped per hour (with an alert metric), and
// the answer to a code request never tells a suppressed address from any other.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, Stack, type Project } from '../../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { replies, startMxSink, type MxSink } from '../../helpers/mx-sink.js';
import { allowOrigin, APP, client, provider } from './setup.js';

const CAP = 4;
let stack: Stack;
let dns: DnsServer;
let sink: MxSink;
let p: Project;

beforeAll(async () => {
  sink = await startMxSink();
  dns = await startDnsServer([
    { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
    { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
  ]);
  stack = await Stack.start({
    env: { POSTGATE_SYSTEM_FROM: 'no-reply@postgate.test', POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port) },
    config: { auth: { codeSendsPerProjectHour: CAP } },
  });
  p = await stack.createProject('abuse');
  await provider(stack, p, 'email', { methods: ['otp'] });
  await allowOrigin(stack, p);
  await stack.verifyDomain('abuse', 'abuse.test');
}, 90_000);
afterAll(async () => {
  await stack?.stop();
  await sink?.close();
  await dns?.close();
});

const hostedSend = (email: string, headers: Record<string, string> = {}) =>
  stack.api('POST', '/api/v1/auth/hosted/email-otp/send', undefined, { slug: 'abuse', email, redirectUri: `${APP}/cb` }, headers);
const codeMails = (to: string) => sink.messages.filter((m) => m.rcptTo.includes(to) && /sign-in code/.test(m.raw.toString()));

describe('hosted code sends', () => {
  it('refuses a keyless hosted call without an Origin (a script, not the widget), and mails nothing', async () => {
    const r = await hostedSend('victim@inbox.test');
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('REDIRECT_NOT_ALLOWED');
    const other = await hostedSend('victim@inbox.test', { origin: 'https://evil.example' });
    expect(other.body.code).toBe('REDIRECT_NOT_ALLOWED');
    await sleep(500);
    expect(codeMails('victim@inbox.test')).toEqual([]);
    const ok = await hostedSend('user@inbox.test', { origin: APP });
    expect(ok.status).toBe(200);
    await sink.waitFor(1);
  });

  it('answers a suppressed address exactly as any other, with no email id', async () => {
    sink.setBehaviour('gone@inbox.test', { rcpt: [replies.noSuchUser] });
    const sent = await stack.api('POST', '/v1/emails', p.keys.live, { from: 'a@abuse.test', to: 'gone@inbox.test', subject: 's', text: 't' });
    await stack.waitEmail(p.keys.live, sent.body.id, (e) => e.status === 'bounced');
    expect((await stack.api('GET', '/v1/suppressions', p.keys.live)).body.data.map((s: any) => s.email)).toContain('gone@inbox.test');

    const keyed = client(stack, p.keys.live);
    const a = await keyed.post('/sign-in/email-otp/send', { email: 'gone@inbox.test' });
    const b = await keyed.post('/sign-in/email-otp/send', { email: 'fine@inbox.test' });
    expect([a.status, a.body]).toEqual([b.status, b.body]);
    expect(a.status).toBe(200);
    expect(JSON.stringify(a.body)).not.toMatch(/id|suppress/i);
  });

  it(`caps a project's code sends at ${CAP} an hour and counts it for the operator`, async () => {
    // Two sends so far this hour (user@, fine@ above; the suppressed one counts too: three).
    const answers = [];
    for (let i = 0; i < CAP; i++) answers.push((await hostedSend(`many${i}@inbox.test`, { origin: APP })).status);
    expect(answers.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(answers.filter((s) => s === 200).length).toBe(1);
    const metrics = await (await fetch(`${stack.url}/metrics`)).text();
    expect(metrics).toMatch(/postgate_auth_code_sends_capped_total\{project="abuse"\} [1-9]/);
  });
});
