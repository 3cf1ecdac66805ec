// The inbound plugin's hooks (gateway/hooks/inbound.ts) on the gateway's real runtime (outbox in a temp
// dir, config from the environment): which recipients are ours (shape only: the MAC is control's),
// a report recorded as events of the email its envelope address names (not the one its body claims),
// mail that reports nothing accepted and ignored, a failure to record answered DENYSOFT, and reverse
// DNS answered whatever the lookup does.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import constants from 'haraka-constants';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bounceLocalPart, unsubscribeLocalPart } from '../../../common/return-path.js';
import type { HarakaAddress } from '../../../gateway/haraka.js';
import { type InboundConnection, type InboundHooks, ourLocalPart } from '../../../gateway/hooks/inbound.js';
import type { GatewayRuntime } from '../../../gateway/runtime.js';
import { type DnsServer, startDnsServer } from '../../helpers/dns-server.js';
import { dsn } from '../../helpers/reports.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-inbound-hooks-'));
let rt: GatewayRuntime;
let hooks: InboundHooks;
let dns: DnsServer;

beforeAll(async () => {
  dns = await startDnsServer();
  process.env.POSTGATE_DATA_DIR = dir;
  process.env.POSTGATE_LOG_LEVEL = 'silent';
  process.env.POSTGATE_DNS_SERVERS = dns.address;
  fs.mkdirSync(path.join(dir, 'gateway'), { recursive: true });
  rt = await (await import('../../../gateway/runtime.js')).gatewayRuntime();
  hooks = await (await import('../../../gateway/hooks/inbound.js')).inboundHooks();
});
afterAll(async () => {
  rt?.outbox.close();
  await dns?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const HEX = '0193aaaa00007000800000000000000a';
const EMAIL_ID = '0193aaaa-0000-7000-8000-00000000000a';
const MAC = '0123456789abcdef';
const addr = (user: string, host: string) => ({ user, host, address: `${user}@${host}` }) as unknown as HarakaAddress;
const conn = (rcpts: HarakaAddress[], raw?: Buffer, from = 'MAILER-DAEMON@mx.inbox.test'): InboundConnection => ({
  remote: { ip: '127.0.0.1' },
  transaction: raw && { mail_from: { address: from } as HarakaAddress, rcpt_to: rcpts, message_stream: { get_data: (cb) => cb(raw) } },
  loginfo() {},
});
const answer = (call: (next: (code?: number, msg?: unknown) => void) => void) =>
  new Promise<[number | undefined, unknown]>((resolve) => call((code, msg) => resolve([code, msg])));
const eventsOf = async (emailId: string) => (await rt.outbox.eventsAfter(0, 1000)).filter((e) => e.emailId === emailId);

describe('ourLocalPart', () => {
  it('takes bounce and unsubscribe tokens under any return-path subdomain, in any case', () => {
    const b = bounceLocalPart(HEX, 2, MAC);
    expect(ourLocalPart(addr(b, 'pg-bounces.acme.test'))).toBe(b);
    expect(ourLocalPart(addr(b.toUpperCase(), 'Custom.Acme.Test'))).toBe(b);
    const u = unsubscribeLocalPart(`${HEX}.0.${MAC}`);
    expect(ourLocalPart(addr(u, 'pg-bounces.acme.test'))).toBe(u);
  });

  it('refuses anything else: other local parts, bad tokens, a domain without a subdomain', () => {
    expect(ourLocalPart(addr('postmaster', 'pg-bounces.acme.test'))).toBeUndefined();
    expect(ourLocalPart(addr(`b+${HEX}.${MAC.slice(1)}`, 'pg-bounces.acme.test'))).toBeUndefined();
    expect(ourLocalPart(addr(bounceLocalPart(HEX, 0, MAC), 'acme.test'))).toBeUndefined();
    expect(ourLocalPart({ user: undefined, host: undefined } as unknown as HarakaAddress)).toBeUndefined();
  });
});

describe('inbound hooks', () => {
  it('rcpt accepts our addresses and denies others with 5.1.1', async () => {
    const ours = addr(bounceLocalPart(HEX, 0, MAC), 'pg-bounces.acme.test');
    expect(await answer((next) => hooks.rcpt(next, conn([]), [ours]))).toEqual([constants.ok, undefined]);
    expect(await answer((next) => hooks.rcpt(next, conn([]), [addr('ceo', 'pg-bounces.acme.test')]))).toEqual([
      constants.deny,
      '5.1.1 <ceo@pg-bounces.acme.test>: no such address here',
    ]);
  });

  it('queue records a DSN as events of the email its envelope address names', async () => {
    const local = bounceLocalPart(HEX, 0, MAC);
    // The report's own To: names another address; the envelope decides.
    const raw = dsn(`${bounceLocalPart('ffffffffffff7fff8fffffffffffffff', 0, MAC)}@pg-bounces.acme.test`, [
      { recipient: 'gone@inbox.test', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 user unknown' },
      { recipient: 'slow@inbox.test', action: 'delayed', status: '4.2.2', diagnostic: '452 4.2.2 mailbox full' },
    ]);
    expect(await answer((next) => hooks.queue(next, conn([addr(local, 'pg-bounces.acme.test')], raw)))).toEqual([constants.ok, 'thanks']);
    const events = await eventsOf(EMAIL_ID);
    expect(events.map((e) => [e.type, e.recipient, e.enhancedCode, e.cause, e.token])).toEqual([
      ['bounced', 'gone@inbox.test', '5.1.1', '', local],
      ['deferred', 'slow@inbox.test', '4.2.2', 'receiver', local],
    ]);
    expect(events.every((e) => e.attempt === 0 && e.nextAttemptMs === 0)).toBe(true);
  });

  it('mail that reports nothing is accepted and records nothing', async () => {
    const hex = '0193aaaa00007000800000000000000b';
    const raw = Buffer.from('From: someone@else.test\r\nSubject: hello\r\n\r\njust a reply\r\n');
    const r = addr(bounceLocalPart(hex, 0, MAC), 'pg-bounces.acme.test');
    expect(await answer((next) => hooks.queue(next, conn([r], raw, 'someone@else.test')))).toEqual([constants.ok, 'thanks']);
    expect(await eventsOf('0193aaaa-0000-7000-8000-00000000000b')).toEqual([]);
  });

  it('a report that cannot be recorded is answered DENYSOFT, so the sender tries again', async () => {
    const record = rt.record;
    rt.record = () => Promise.reject(new Error('disk full'));
    try {
      const raw = dsn('x@pg-bounces.acme.test', [{ recipient: 'gone@inbox.test', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 no' }]);
      const r = addr(bounceLocalPart(HEX, 1, MAC), 'pg-bounces.acme.test');
      expect(await answer((next) => hooks.queue(next, conn([r], raw)))).toEqual([constants.denysoft, '4.3.0 try again later']);
    } finally {
      rt.record = record;
    }
  });

  it('queue without a transaction is DENYSOFT', async () => {
    expect(await answer((next) => hooks.queue(next, conn([])))).toEqual([constants.denysoft, 'no transaction']);
  });

  it('reverse DNS always lets the connection go on, NXDOMAIN when the lookup fails', async () => {
    // Not in /etc/hosts, and unknown to the loopback DNS server.
    const c = { ...conn([]), remote: { ip: '203.0.113.9' } };
    expect(await answer((next) => hooks.lookupRdns(next, c))).toEqual([constants.ok, 'NXDOMAIN']);
  });
});
