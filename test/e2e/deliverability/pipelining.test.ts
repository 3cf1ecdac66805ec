// Outbound PIPELINING (RFC 2920) through the real gateway and a loopback MX: when the server
// offers it, MAIL FROM, RCPT TO and DATA leave in one write; a refused MAIL FROM or RCPT TO is
// handled as Haraka handles it without pipelining (the answers to what Haraka then does not send
// go to nobody); a server that does not offer it gets one command at a time. (Refusals and
// retries at every step are also in outcomes.test.ts, which runs against a pipelining server.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Project } from '../../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, type MxSink, messageIdOf, replies } from '../../helpers/mx-sink.js';
import { publishDomain } from './helpers.js';

let dns: DnsServer;
const opened: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  dns = await startDnsServer([
    { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
    { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
  ]);
});
afterAll(async () => {
  for (const o of opened.reverse()) await o.close().catch(() => {});
  await dns?.close();
});

/** A stack delivering to `sink`, with a verified sender domain. */
async function stackFor(sink: MxSink, name: string): Promise<{ stack: Stack; p: Project }> {
  const stack = await Stack.start({
    env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port), POSTGATE_SENDING_IPS: '127.0.0.1' },
    config: { delivery: { retryDelays: [1], maxTempFailures: 3, connectTimeout: 5 } },
  });
  opened.push({ close: async () => void (await stack.stop()) });
  const p = await stack.createProject(name);
  await stack.setPlan(name, 'scale');
  await publishDomain(stack, p.keys.live, dns, `${name}.test`);
  return { stack, p };
}

async function send(stack: Stack, p: Project, from: string, to: string): Promise<string> {
  const r = await stack.api('POST', '/v1/emails', p.keys.live, { from, to, subject: `to ${to}`, text: 'x' });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return r.body.id;
}
const types = (e: any) => e.events.map((x: any) => x.type);
/** The reads that carried the MAIL FROM of mail to `rcpt`, as command lines. */
const packetsTo = (sink: MxSink, rcpt: string) => sink.mailPackets().filter((p) => p.some((l) => l.toLowerCase() === `rcpt to:<${rcpt}>`));

describe('outbound pipelining', () => {
  let sink: MxSink;
  let stack: Stack;
  let p: Project;
  beforeAll(async () => {
    sink = await startMxSink();
    opened.push(sink);
    ({ stack, p } = await stackFor(sink, 'piped'));
  }, 60_000);
  const wait = (id: string, done: (e: any) => boolean) => stack.waitEmail(p.keys.live, id, done, 30_000);

  it('sends MAIL FROM, RCPT TO and DATA in one write to a server that offers PIPELINING', async () => {
    const id = await send(stack, p, 'hello@piped.test', 'one@inbox.test');
    const email = await wait(id, (e) => e.status === 'sent');
    expect(types(email)).toEqual(['queued', 'sending', 'sent']);
    expect(sink.messages.filter((m) => messageIdOf(m) === id)).toHaveLength(1);
    const [packet] = packetsTo(sink, 'one@inbox.test');
    expect(packet?.map((l) => l.split(':')[0]!.toUpperCase())).toEqual(['MAIL FROM', 'RCPT TO', 'DATA']);
  });

  it('a refused recipient bounces as it did one command at a time; the DATA sent ahead is answered to nobody', async () => {
    sink.setBehaviour('gone@inbox.test', { rcpt: [replies.noSuchUser] });
    const gone = await wait(await send(stack, p, 'hello@piped.test', 'gone@inbox.test'), (e) => e.status === 'bounced');
    expect(types(gone)).toEqual(['queued', 'sending', 'bounced']);
    expect(JSON.stringify(gone.events.at(-1))).toContain('5.1.1');
    expect(packetsTo(sink, 'gone@inbox.test')[0]).toContain('DATA');
    // Mail after it is delivered as usual.
    const next = await wait(await send(stack, p, 'hello@piped.test', 'after@inbox.test'), (e) => e.status === 'sent');
    expect(sink.messages.filter((m) => messageIdOf(m) === next.id)).toHaveLength(1);
  });

  it('a refused MAIL FROM is deferred and retried; the RCPT and DATA sent ahead are answered to nobody', async () => {
    sink.setBehaviour('*', { mail: [replies.tryLater] });
    const email = await wait(await send(stack, p, 'hello@piped.test', 'later@inbox.test'), (e) => e.status === 'sent');
    sink.setBehaviour('*', {});
    expect(types(email)).toEqual(['queued', 'sending', 'deferred', 'sending', 'sent']);
    expect(sink.messages.filter((m) => messageIdOf(m) === email.id)).toHaveLength(1);
    // Both attempts pipelined their envelope.
    expect(packetsTo(sink, 'later@inbox.test')).toHaveLength(2);
  });
});

describe('without PIPELINING offered', () => {
  it('sends one command at a time', async () => {
    const sink = await startMxSink({ noPipelining: true });
    opened.push(sink);
    const { stack, p } = await stackFor(sink, 'plain');
    const id = await send(stack, p, 'hello@plain.test', 'step@inbox.test');
    await stack.waitEmail(p.keys.live, id, (e) => e.status === 'sent', 30_000);
    const mails = sink.mailPackets();
    expect(mails.length).toBeGreaterThan(0);
    for (const packet of mails) expect(packet.map((l) => l.split(':')[0]!.toUpperCase())).toEqual(['MAIL FROM']);
  }, 60_000);
});
