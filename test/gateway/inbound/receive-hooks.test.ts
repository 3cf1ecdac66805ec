// The inbound plugin's hooks (gateway/hooks/inbound.ts) for receiving domains, on the gateway's real runtime
// (outbox in a temp dir, config from the environment): RCPT taken for any address at a receiving domain and
// refused (550 5.1.1) for any other, the limits with their own codes, the message committed to the outbox
// as a 'received' event (its InboundMail read back apart) before the 250, the rate counted once accepted,
// and a message that cannot be recorded answered 4.3.0 (the sender tries again; nothing counted).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fromBinary } from '@bufbuild/protobuf';
import constants from 'haraka-constants';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HarakaAddress } from '../../../gateway/haraka.js';
import type { InboundConnection, InboundHooks } from '../../../gateway/hooks/inbound.js';
import { receivingDomains } from '../../../gateway/inbound/receive.js';
import type { GatewayRuntime } from '../../../gateway/runtime.js';
import { InboundMailSchema } from '../../../proto/gen/postgate/gateway/v1/gateway_pb.js';
import { type DnsServer, startDnsServer } from '../../helpers/dns-server.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-receive-hooks-'));
let rt: GatewayRuntime;
let hooks: InboundHooks;
let dns: DnsServer;

beforeAll(async () => {
  dns = await startDnsServer([{ type: 'TXT', name: 'sender.test', value: 'v=spf1 ip4:127.0.0.1 -all' }]);
  Object.assign(process.env, {
    POSTGATE_DATA_DIR: dir,
    POSTGATE_LOG_LEVEL: 'silent',
    POSTGATE_DNS_SERVERS: dns.address,
    POSTGATE_INBOUND_MAX_BYTES: '2000',
    POSTGATE_INBOUND_MAX_RECIPIENTS: '2',
    POSTGATE_INBOUND_RATE_PER_MINUTE: '2',
  });
  fs.mkdirSync(path.join(dir, 'gateway'), { recursive: true });
  rt = await (await import('../../../gateway/runtime.js')).gatewayRuntime();
  await (await receivingDomains(rt.outbox)).set([
    { domain: 'acme.test', projectId: 'p1' },
    { domain: 'rated.test', projectId: 'p1' },
    { domain: 'other.test', projectId: 'p2' },
  ]);
  hooks = await (await import('../../../gateway/hooks/inbound.js')).inboundHooks();
});
afterAll(async () => {
  rt?.outbox.close();
  await dns?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const addr = (user: string, host: string) => ({ user, host, address: `${user}@${host}` }) as unknown as HarakaAddress;
type Txn = NonNullable<InboundConnection['transaction']>;
const conn = (raw = Buffer.from('From: ann@sender.test\r\nSubject: hi\r\n\r\nhello')) => {
  const txn: Txn = { mail_from: { address: 'ann@sender.test' } as HarakaAddress, rcpt_to: [], message_stream: { get_data: (cb) => cb(raw) } };
  return { remote: { ip: '127.0.0.1' }, hello: { host: 'mx.sender.test' }, transaction: txn, loginfo() {} } as InboundConnection & { transaction: Txn };
};
const answer = (call: (next: (code?: number, msg?: unknown) => void) => void) =>
  new Promise<[number | undefined, unknown]>((resolve) => call((code, msg) => resolve([code, msg])));
/** RCPT as Haraka runs it: the hook, then (when it says OK) the address joins the transaction. */
async function rcpt(c: ReturnType<typeof conn>, a: HarakaAddress) {
  const r = await answer((next) => hooks.rcpt(next, c, [a]));
  if (r[0] === constants.ok) c.transaction.rcpt_to.push(a);
  return r;
}
const codeOf = (msg: unknown) => (msg as { code?: number }).code;

describe('receiving at the inbound hooks', () => {
  it('RCPT: any address at a receiving domain; 550 5.1.1 for another domain, a subdomain or a look-alike', async () => {
    const c = conn();
    expect((await rcpt(c, addr('Anyone', 'ACME.test')))[0]).toBe(constants.ok);
    for (const [u, h] of [
      ['x', 'nowhere.test'],
      ['x', 'sub.acme.test'],
      ['x', 'acme.test.evil.test'],
    ] as const) {
      const [code, msg] = await rcpt(c, addr(u, h));
      expect(code).toBe(constants.deny);
      expect(String(msg)).toMatch(/^5\.1\.1 /);
    }
  });

  it('the message is in the outbox, with its InboundMail, before the 250; one event per project', async () => {
    const c = conn();
    await rcpt(c, addr('a', 'acme.test'));
    await rcpt(c, addr('b', 'other.test'));
    const [code, msg] = await answer((next) => hooks.queue(next, c));
    expect(code).toBe(constants.ok);
    const ids = String(msg).replace('2.0.0 received as ', '').split(' ');
    expect(ids).toHaveLength(2);
    const events = (await rt.outbox.eventsAfter(0, 1000)).filter((e) => ids.includes(e.emailId));
    expect(events.map((e) => e.type)).toEqual(['received', 'received']);
    const mails = events.map((e) => fromBinary(InboundMailSchema, rt.outbox.inboundOf(e.seq)!));
    expect(mails.map((m) => [m.projectId, m.rcptTo])).toEqual([
      ['p1', ['a@acme.test']],
      ['p2', ['b@other.test']],
    ]);
    expect(mails[0]).toMatchObject({ mailFrom: 'ann@sender.test', helo: 'mx.sender.test', remoteIp: '127.0.0.1', spf: 'pass' });
    expect(Buffer.from(mails[0]!.raw).toString()).toContain('Subject: hi');
  });

  it('recipients past the limit: 452 4.5.3', async () => {
    const c = conn();
    await rcpt(c, addr('a', 'acme.test'));
    await rcpt(c, addr('b', 'acme.test'));
    const [code, msg] = await rcpt(c, addr('c', 'acme.test'));
    expect(code).toBe(constants.denysoft);
    expect([codeOf(msg), String(msg)]).toEqual([452, '4.5.3 too many recipients (at most 2 per message)']);
  });

  it('a message past the size limit: 5.3.4, nothing recorded', async () => {
    const c = conn(Buffer.from(`Subject: big\r\n\r\n${'x'.repeat(3000)}`));
    await rcpt(c, addr('a', 'acme.test'));
    const before = await rt.outbox.lastSeq();
    const [code, msg] = await answer((next) => hooks.queue(next, c));
    expect(code).toBe(constants.deny);
    expect(String(msg)).toMatch(/^5\.3\.4 /);
    expect(await rt.outbox.lastSeq()).toBe(before);
  });

  it('a message that cannot be recorded is 4.3.0 and not counted; the domain rate counts accepted ones (451 4.7.1 past it)', async () => {
    const record = rt.record;
    rt.record = () => Promise.reject(new Error('disk full'));
    try {
      const c = conn();
      await rcpt(c, addr('a', 'rated.test'));
      expect(await answer((next) => hooks.queue(next, c))).toEqual([constants.denysoft, '4.3.0 try again later']);
    } finally {
      rt.record = record;
    }
    for (let i = 0; i < 2; i++) {
      const c = conn();
      expect((await rcpt(c, addr('a', 'rated.test')))[0]).toBe(constants.ok);
      expect((await answer((next) => hooks.queue(next, c)))[0]).toBe(constants.ok);
    }
    const [code, msg] = await rcpt(conn(), addr('a', 'rated.test'));
    expect([code, codeOf(msg)]).toEqual([constants.denysoft, 451]);
    expect(String(msg)).toMatch(/^4\.7\.1 rated\.test /);
  });
});
