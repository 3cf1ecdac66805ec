// gateway/inbound/receive.ts: the receiving domains kept across restarts, the limits judged at RCPT and
// DATA, SPF/DKIM/DMARC judged by mailauth against a DNS server on loopback, and the 'received' events.
import crypto from 'node:crypto';
import { fromBinary } from '@bufbuild/protobuf';
import { dkimSign } from 'mailauth/lib/dkim/sign.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeResolver } from '../../../core/dns.js';
import { memoryCounters } from '../../../core/window-counters.js';
import { checkAuth, InboundLimits, ReceivingDomains, receivedEvents } from '../../../gateway/inbound/receive.js';
import { InboundMailSchema } from '../../../proto/gen/postgate/gateway/v1/gateway_pb.js';
import { type DnsServer, startDnsServer } from '../../helpers/dns-server.js';

const settings = { maxMessageBytes: 1000, maxRecipients: 2, ratePerMinute: 3 };

describe('ReceivingDomains', () => {
  const store = () => {
    const kept = new Map<string, string>();
    return { setting: async (n: string) => kept.get(n), putSetting: async (n: string, v: string) => void kept.set(n, v) };
  };

  it('routes a domain to its project, whatever its case or a trailing dot; nothing else', async () => {
    const d = new ReceivingDomains(store());
    await d.set([{ domain: 'Acme.Test', projectId: 'p1' }]);
    expect(d.projectOf('acme.test')).toBe('p1');
    expect(d.projectOf('ACME.TEST.')).toBe('p1');
    expect(d.projectOf('sub.acme.test')).toBeUndefined();
    expect(d.projectOf('acme.test.evil.test')).toBeUndefined();
  });

  it('a push replaces the whole list, and a restart (a new instance on the same outbox) starts with the last one', async () => {
    const outbox = store();
    const d = new ReceivingDomains(outbox);
    await d.set([{ domain: 'a.test', projectId: 'p1' }]);
    await d.set([{ domain: 'b.test', projectId: 'p2' }]);
    expect(d.projectOf('a.test')).toBeUndefined();
    const restarted = new ReceivingDomains(outbox);
    expect(restarted.size).toBe(0);
    await restarted.load();
    expect(restarted.projectOf('b.test')).toBe('p2');
    expect(restarted.size).toBe(1);
  });
});

describe('InboundLimits', () => {
  it('recipients per message: 4.5.3 once the transaction holds the limit', () => {
    const l = new InboundLimits(settings, memoryCounters());
    expect(l.atRcpt('a.test', 0)).toBeUndefined();
    expect(l.atRcpt('a.test', 1)).toBeUndefined();
    expect(l.atRcpt('a.test', 2)).toMatchObject({ code: 452, text: expect.stringMatching(/^4\.5\.3 /) });
  });

  it('a domain takes its rate of messages a minute (4.7.1 past it), each message counted once per domain; others are not held', () => {
    const l = new InboundLimits(settings, memoryCounters());
    l.count(['a.test', 'a.test', 'b.test']);
    l.count(['a.test']);
    expect(l.atRcpt('a.test', 0)).toBeUndefined();
    l.count(['a.test']);
    expect(l.atRcpt('a.test', 0)).toMatchObject({ code: 451, text: expect.stringMatching(/^4\.7\.1 a\.test/) });
    expect(l.atRcpt('b.test', 0)).toBeUndefined();
  });

  it('size: 5.3.4 past the limit, not at it', () => {
    const l = new InboundLimits(settings);
    expect(l.atData(1000)).toBeUndefined();
    expect(l.atData(1001)).toMatchObject({ code: 550, text: expect.stringMatching(/^5\.3\.4 /) });
  });
});

describe('checkAuth (mailauth over our resolver)', () => {
  let dns: DnsServer;
  const key = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  beforeAll(async () => {
    dns = await startDnsServer([
      { type: 'TXT', name: 'good.test', value: 'v=spf1 ip4:127.0.0.1 -all' },
      { type: 'TXT', name: 'sel._domainkey.good.test', value: `v=DKIM1; k=rsa; p=${key.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}` },
      { type: 'TXT', name: '_dmarc.good.test', value: 'v=DMARC1; p=reject' },
      { type: 'TXT', name: 'bank.test', value: 'v=spf1 ip4:192.0.2.1 -all' },
      { type: 'TXT', name: '_dmarc.bank.test', value: 'v=DMARC1; p=quarantine' },
    ]);
  });
  afterAll(async () => dns?.close());
  const client = (mailFrom: string) => ({ ip: '127.0.0.1', helo: 'mx.client.test', mailFrom });

  it('signed mail from an authorised address passes all three', async () => {
    const msg = Buffer.from('From: ann@good.test\r\nTo: x@acme.test\r\nSubject: hi\r\nMessage-ID: <1@good.test>\r\n\r\nhello\r\n');
    const signed = await dkimSign(msg, { signatureData: [{ signingDomain: 'good.test', selector: 'sel', privateKey: pem }] } as never);
    const raw = Buffer.concat([Buffer.from(signed.signatures), msg]);
    const v = await checkAuth(raw, client('ann@good.test'), makeResolver([dns.address]), 'mx.postgate.test');
    expect(v).toMatchObject({ spf: 'pass', dkim: 'pass', dmarc: 'pass' });
    expect(v.header).toMatch(/^mx\.postgate\.test; .*dkim=pass.*spf=pass.*dmarc=pass/);
    expect(JSON.parse(v.json).dkim).toEqual([{ result: 'pass', domain: 'good.test', selector: 'sel' }]);
  });

  it('a forged From fails DMARC (and SPF), and says whose policy', async () => {
    const raw = Buffer.from('From: ceo@bank.test\r\nTo: x@acme.test\r\nSubject: pay\r\n\r\nnow\r\n');
    const v = await checkAuth(raw, client('ceo@bank.test'), makeResolver([dns.address]), 'mx.postgate.test');
    expect(v).toMatchObject({ spf: 'fail', dkim: 'none', dmarc: 'fail' });
    expect(JSON.parse(v.json).dmarc).toEqual({ result: 'fail', domain: 'bank.test', policy: 'quarantine' });
  });

  it('a tampered signed body does not pass DKIM (mailauth says neutral: body hash did not verify), so DMARC fails', async () => {
    const msg = Buffer.from('From: ann@good.test\r\nTo: x@acme.test\r\nSubject: hi\r\n\r\nhello\r\n');
    const signed = await dkimSign(msg, { signatureData: [{ signingDomain: 'good.test', selector: 'sel', privateKey: pem }] } as never);
    const raw = Buffer.concat([Buffer.from(signed.signatures), Buffer.from(msg.toString().replace('hello', 'HELLO'))]);
    const v = await checkAuth(raw, client(''), makeResolver([dns.address]), 'mx.postgate.test');
    expect(v.dkim).toBe('neutral');
    expect(v.dmarc).toBe('fail');
    expect(v.header).toContain('body hash did not verify');
  });
});

describe('receivedEvents', () => {
  it('one event per project, each with its own id and the message, envelope and results', () => {
    const raw = Buffer.from('Subject: x\r\n\r\ny');
    const auth = { spf: 'pass', dkim: 'none', dmarc: 'none', header: 'mx; spf=pass', json: '{}' };
    const events = receivedEvents(
      raw,
      { ip: '127.0.0.1', helo: 'h', mailFrom: 'a@b.test' },
      new Map([
        ['p1', ['x@a.test', 'y@a.test']],
        ['p2', ['z@c.test']],
      ]),
      auth,
      1_800_000_000_000,
    );
    expect(events).toHaveLength(2);
    expect(new Set(events.map((e) => e.emailId)).size).toBe(2);
    const m = fromBinary(InboundMailSchema, events[0]!.inbound!);
    expect(m).toMatchObject({ projectId: 'p1', rcptTo: ['x@a.test', 'y@a.test'], mailFrom: 'a@b.test', spf: 'pass', authenticationResults: 'mx; spf=pass' });
    expect(Buffer.from(m.raw).equals(raw)).toBe(true);
    expect(events[0]).toMatchObject({ type: 'received', atMs: 1_800_000_000_000 });
  });
});
