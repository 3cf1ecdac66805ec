// Outbound connection reuse through the real gateway and a loopback MX that offers STARTTLS
// and SMTPUTF8: mail that follows a delivery to the same MX goes over the same TLS connection
// (RSET between messages, no new EHLO); a server that hangs up on a kept connection costs no
// deferral; a connection limit counts kept connections. (An envelope that needs SMTPUTF8, which
// only the gateway's gRPC side takes, is in test/e2e/gateway.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, sleep, type Project } from '../../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, type MxSink, messageIdOf } from '../../helpers/mx-sink.js';
import { publishDomain } from './helpers.js';

let dns: DnsServer;
let sink: MxSink;
let stack: Stack;
let p: Project;

/**
 * How long a kept connection waits for the next message. Long enough that on a busy CI machine the
 * next message (sent once the last one shows as sent) still finds the connection kept.
 */
const IDLE_SECONDS = 6;

const received = (id: string) => sink.messages.filter((m) => messageIdOf(m) === id);

beforeAll(async () => {
  sink = await startMxSink({ starttls: true });
  dns = await startDnsServer([
    { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
    { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
  ]);
  stack = await Stack.start({
    env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port), POSTGATE_SENDING_IPS: '127.0.0.1' },
    config: { delivery: { retryDelays: [30], maxTempFailures: 3, connectTimeout: 5, connectionIdleSeconds: IDLE_SECONDS } },
  });
  p = await stack.createProject('reuse');
  await stack.setPlan('reuse', 'scale');
  await publishDomain(stack, p.keys.live, dns, 'acme.test');
}, 60_000);
afterAll(async () => {
  await stack?.stop();
  await sink?.close();
  await dns?.close();
});

async function send(to: string, subject = `to ${to}`): Promise<string> {
  const r = await stack.api('POST', '/v1/emails', p.keys.live, { from: 'hello@acme.test', to, subject, text: 'x' });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return r.body.id;
}
const sent = (id: string) => stack.waitEmail(p.keys.live, id, (e) => e.status === 'sent' || e.status === 'failed', 30_000);
/** Sends one after another, each once the previous is delivered. */
async function sendInTurn(n: number, to: (i: number) => string): Promise<any[]> {
  const out = [];
  for (let i = 0; i < n; i++) out.push(await sent(await send(to(i))));
  return out;
}
/** Until the sink has no connection open (kept ones closed by their idle time). */
async function idle(ms = (IDLE_SECONDS + 8) * 1000): Promise<void> {
  const until = Date.now() + ms;
  while (sink.connections().open && Date.now() < until) await sleep(100);
  expect(sink.connections().open).toBe(0);
}

describe('outbound connection reuse', () => {
  it('mail that follows a delivery to the same MX goes over the same TLS connection', async () => {
    const before = sink.connections().opened;
    const emails = await sendInTurn(5, (i) => `seq${i}@inbox.test`);
    for (const e of emails) expect(e.events.map((x: any) => x.type)).toEqual(['queued', 'sending', 'sent']);
    const msgs = emails.map((e) => received(e.id));
    for (const m of msgs) expect(m).toHaveLength(1);
    // One connection served all five, under TLS throughout.
    expect(new Set(msgs.map((m) => m[0]!.connection)).size).toBe(1);
    expect(msgs.every((m) => m[0]!.tls)).toBe(true);
    expect(sink.connections().opened - before).toBe(1);
    // Kept only for the idle time (IDLE_SECONDS here), then closed by us.
    await idle();
  });

  it('a server that hung up on a kept connection costs no deferral', async () => {
    await sendInTurn(1, () => 'first@inbox.test');
    // The server ends the idle connection on its own.
    sink.dropConnections();
    await sleep(200);
    const [after] = await sendInTurn(1, () => 'after-drop@inbox.test');
    expect(after.events.map((x: any) => x.type)).toEqual(['queued', 'sending', 'sent']);

    // The server hangs up just as the kept connection is used again: the MX is tried again on a new one, no deferral.
    sink.setBehaviour('*', { hangUpOnReuse: true });
    try {
      const before = sink.connections().opened;
      const emails = await sendInTurn(3, (i) => `hangup${i}@inbox.test`);
      for (const e of emails) expect(e.events.map((x: any) => x.type)).toEqual(['queued', 'sending', 'sent']);
      for (const e of emails) expect(received(e.id)).toHaveLength(1);
      // Each message needed a new connection after the hang-up on the kept one.
      expect(sink.connections().opened - before).toBe(3);
    } finally {
      sink.setBehaviour('*', {});
    }
    await idle();
  });

  /** Runs `fn` with the MX's connection limit at `connections` and each DATA answered after `dataDelayMs`, from no connection open. */
  async function atLimit(connections: number, dataDelayMs: number, fn: (openedBefore: number) => Promise<void>): Promise<void> {
    await stack.cli('throttle', 'set', '--provider', 'other', '--connections', String(connections));
    sink.setBehaviour('*', { dataDelayMs });
    try {
      await idle();
      await fn(sink.connections().opened);
    } finally {
      sink.setBehaviour('*', {});
      await stack.cli('throttle', 'set', '--provider', 'other', '--connections', '0');
    }
  }

  it('a connection limit counts kept connections', () =>
    atLimit(2, 150, async (before) => {
      const ids = [];
      for (let i = 0; i < 12; i++) ids.push(await send(`limit${i}@inbox.test`));
      for (const id of ids) expect((await sent(id)).status).toBe('sent');
      const c = sink.connections();
      // Kept connections stay within the limit; at most one more is saying QUIT as a slot passes on.
      expect(c.open).toBeLessThanOrEqual(2);
      expect(c.maxOpen).toBeLessThanOrEqual(3);
      // Fewer connections than messages: the limit's connections were reused.
      expect(c.opened - before).toBeLessThan(ids.length);
    }));

  it("a burst at the connection limit goes over the limit's connections, each kept for the next message", () =>
    atLimit(3, 50, async (before) => {
      const r = await stack.api(
        'POST',
        '/v1/emails/batch',
        p.keys.live,
        Array.from({ length: 40 }, (_, i) => ({ from: 'hello@acme.test', to: `burst${i}@inbox.test`, subject: `burst ${i}`, text: 'x' })),
      );
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      for (const { id } of r.body.data as Array<{ id: string }>) expect((await sent(id)).status).toBe('sent');
      const c = sink.connections();
      // Every session ending while others wait for a slot hands its connection on: no QUIT and reconnect
      // per message (with the old rule, a session ending while another waited for a connection said QUIT).
      expect(c.opened - before).toBeLessThanOrEqual(3);
      expect(c.maxOpen).toBeLessThanOrEqual(4);
    }));
});
