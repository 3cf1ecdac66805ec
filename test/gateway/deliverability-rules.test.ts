// The pure rules of deliverability, without processes: provider grouping, warm-up
// arithmetic, the pacer's decisions, return-path tokens, DKIM signing, and reading
// DSN and ARF reports (built here as real multipart/report messages).
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { classify, providerOfDomain, providerOfMx } from '../../common/providers.js';
import { dayOf, nextDayStart, clock } from '../../core/clock.js';
import { normFor, warmupDay } from '../../common/warmup.js';
import { Pacer, type PaceRequest } from '../../gateway/pacing/pacer.js';
import { MailTokens } from '../../control/unsubscribe/mail-tokens.js';
import { parseToken } from '../../common/return-path.js';
import { deriveKey } from '../../core/crypto.js';
import { signMessage, Signer } from '../../gateway/dkim.js';
import { readInbound, parseFieldBlocks } from '../../gateway/inbound/report.js';
import { rejectRetryDelay } from '../../gateway/retry.js';
import { dsn, arf } from '../helpers/reports.js';

const realm = createRequire(import.meta.url)('../helpers/realm-clock.cjs') as { stubNow(fn: () => number): () => void };

describe('receiving providers', () => {
  it('groups by mailbox domain and by MX host suffix; every MX must agree', () => {
    expect(providerOfDomain('gmail.com')).toBe('google');
    expect(providerOfDomain('Mail.RU')).toBe('mailru');
    expect(providerOfDomain('sub.yandex.ru')).toBe('yandex');
    expect(providerOfDomain('example.com')).toBeUndefined();
    expect(classify('company.test', ['aspmx.l.google.com', 'alt1.aspmx.l.google.com'])).toBe('google');
    expect(classify('corp.test', ['corp-test.mail.protection.outlook.com'])).toBe('microsoft');
    expect(classify('shop.test', ['mx.yandex.net'])).toBe('yandex');
    expect(classify('shop.test', ['mxs.mail.ru'])).toBe('mailru');
    expect(classify('me.test', ['mx01.mail.icloud.com.'])).toBe('apple');
    expect(classify('y.test', ['mta5.am0.yahoodns.net'])).toBe('yahoo');
    // Mixed providers, or a look-alike name, are not attributed.
    expect(providerOfMx(['aspmx.l.google.com', 'mx.self-hosted.test'])).toBeUndefined();
    expect(classify('evil.test', ['google.com.evil.test'])).toBe('other');
    expect(classify('plain.test', [])).toBe('other');
  });
});

describe('warm-up', () => {
  it('counts days from the first sending day (UTC) and grows the norm per day up to its cap', () => {
    const start = Date.parse('2026-03-01T15:00:00Z');
    expect(warmupDay(0, start)).toBe(1);
    expect(warmupDay(start, Date.parse('2026-03-01T23:59:59Z'))).toBe(1);
    expect(warmupDay(start, Date.parse('2026-03-02T00:00:00Z'))).toBe(2);
    expect(warmupDay(start, Date.parse('2026-03-11T08:00:00Z'))).toBe(11);
    const t = { dailyNorm: 100, growth: 1.5, maxDailyNorm: 400 };
    expect([1, 2, 3, 4, 5].map((d) => normFor(t, d))).toEqual([100, 150, 225, 337, 400]);
    expect(normFor({ dailyNorm: 0, growth: 2, maxDailyNorm: 0 }, 3)).toBe(Infinity);
    expect(nextDayStart(Date.parse('2026-03-01T15:00:00Z'))).toBe(Date.parse('2026-03-02T00:00:00Z'));
    expect(dayOf(Date.parse('2026-03-01T23:00:00Z'))).toBe('2026-03-01');
  });
});

describe('pacer', () => {
  const throttle = (p: Partial<{ dailyNorm: number; ratePerMinute: number; connections: number }>) => ({
    google: { dailyNorm: p.dailyNorm ?? 0, growth: 2, maxDailyNorm: 0, ratePerMinute: p.ratePerMinute ?? 0, connections: p.connections ?? 0 },
    other: { dailyNorm: 0, growth: 1, maxDailyNorm: 0, ratePerMinute: 0, connections: 0 },
  });
  const req = (key: string, over: Partial<PaceRequest> = {}): PaceRequest => ({
    key,
    projectId: 'p1',
    bulk: true,
    domain: 'gmail.com',
    provider: 'google',
    recipients: 1,
    warmupStartMs: 0,
    notBeforeMs: 0,
    ...over,
  });

  it("holds bulk over the day's norm until the next UTC day, never transactional; a new day lets it go", () => {
    const persisted: unknown[] = [];
    const pacer = new Pacer(throttle({ dailyNorm: 2 }), (rows) => persisted.push(...rows));
    const woken: string[] = [];
    const wake = (k: string) => () => woken.push(k);
    expect(pacer.decide(req('t1', { bulk: false }), wake('t1'))).toEqual({ kind: 'go' });
    expect(pacer.decide(req('b1'), wake('b1'))).toEqual({ kind: 'go' });
    const held = pacer.decide(req('b2'), wake('b2'));
    expect(held).toMatchObject({ kind: 'hold', hold: 'warmup', untilMs: nextDayStart(clock.now()), norm: 2, used: 2 });
    expect(pacer.decide(req('t2', { bulk: false }), wake('t2'))).toEqual({ kind: 'go' });
    expect(pacer.stats('p1', dayOf(clock.now()))).toEqual([{ provider: 'google', transactional: 2, bulk: 1, heldBulk: 1 }]);
    expect(persisted).toHaveLength(3);
    // Another project has its own budget.
    expect(pacer.decide(req('x1', { projectId: 'p2' }), wake('x1'))).toEqual({ kind: 'go' });

    const offset = clock.offset();
    try {
      clock.setOffset(nextDayStart(clock.now()) - Date.now() + 1000);
      expect(pacer.reconsider()).toBe(1);
      expect(woken).toEqual(['b2']);
      // Day 2 (growth 2): the norm is 4, counted afresh.
      expect(pacer.decide(req('b2'), wake('b2'))).toEqual({ kind: 'go' });
    } finally {
      clock.setOffset(offset);
    }
  });

  it('raising the norm releases held bulk at once', () => {
    const pacer = new Pacer(throttle({ dailyNorm: 1 }), () => {});
    const woken: string[] = [];
    pacer.decide(req('a'), () => woken.push('a'));
    expect(pacer.decide(req('b'), () => woken.push('b'))).toMatchObject({ hold: 'warmup' });
    pacer.setThrottles([{ provider: 'google', dailyNorm: 10, growth: 1, maxDailyNorm: 0, ratePerMinute: 0, connections: 0 }]);
    expect(woken).toEqual(['b']);
  });

  it('keeps a scheduled retry until it is due', () => {
    const pacer = new Pacer(throttle({}), () => {});
    const d = pacer.decide(req('r', { notBeforeMs: clock.now() + 90_000 }), () => {});
    expect(d).toMatchObject({ kind: 'hold', hold: 'retry' });
    expect((d as { delaySec: number }).delaySec).toBeGreaterThanOrEqual(89);
  });

  it('caps connections per provider and hands a freed slot to transactional mail first', () => {
    const pacer = new Pacer(throttle({ connections: 1 }), () => {});
    const woken: string[] = [];
    expect(pacer.decide(req('first'), () => woken.push('first'))).toEqual({ kind: 'go' });
    expect(pacer.decide(req('bulk'), () => woken.push('bulk'))).toMatchObject({ kind: 'hold', hold: 'limit', waitedMs: expect.any(Number) });
    expect(pacer.decide(req('trans', { bulk: false }), () => woken.push('trans'))).toMatchObject({ kind: 'hold', hold: 'limit' });
    pacer.release('first');
    expect(woken).toEqual(['trans']);
    // The woken item comes back through decide() and finds its reserved slot.
    expect(pacer.decide(req('trans', { bulk: false }), () => {})).toEqual({ kind: 'go' });
    pacer.done('trans');
    expect(woken).toEqual(['trans', 'bulk']);
  });

  it('paces to the rate per minute', () => {
    const pacer = new Pacer(throttle({ ratePerMinute: 60 }), () => {});
    expect(pacer.decide(req('a', { bulk: false }), () => {})).toEqual({ kind: 'go' });
    expect(pacer.decide(req('b', { bulk: false }), () => {})).toMatchObject({ kind: 'hold', hold: 'limit' });
  });
});

describe('return-path tokens', () => {
  const tokens = new MailTokens('a master secret');
  const id = crypto.randomUUID();

  it('VERP and unsubscribe addresses fit in 64 characters and verify only untouched', () => {
    const verp = tokens.verpAddress(id, 49, 'acme.test');
    expect(verp).toMatch(/^b\+[0-9a-f]{32}\.49\.[0-9a-f]{16}@pg-bounces\.acme\.test$/);
    const local = verp.split('@')[0]!;
    expect(local.length).toBeLessThanOrEqual(64);
    expect(tokens.verify(local)).toEqual({ kind: 'bounce', emailId: id, index: 49, mac: local.slice(-16) });
    // Another recipient's index under this MAC is refused: a return path names one recipient.
    expect(tokens.verify(local.replace('.49.', '.48.'))).toBeUndefined();
    expect(tokens.verify(local.replace('.49.', '.'))).toBeUndefined();
    // The return paths of mail queued before per-recipient VERP still verify (without an index).
    const legacy = `b+${id.replace(/-/g, '')}.${crypto
      .createHmac('sha256', deriveKey('a master secret', 'mail-tokens'))
      .update(`b:${id.replace(/-/g, '')}`)
      .digest('hex')
      .slice(0, 16)}`;
    expect(tokens.verify(legacy)).toEqual({ kind: 'bounce', emailId: id, mac: legacy.slice(-16) });
    expect(tokens.verify(local.toUpperCase())).toMatchObject({ emailId: id });
    expect(tokens.verify(local.slice(0, -1) + (local.endsWith('0') ? '1' : '0'))).toBeUndefined();
    expect(new MailTokens('another secret').verify(local)).toBeUndefined();

    const u = tokens.unsubscribeToken(id, 3);
    expect(tokens.verify(u)).toMatchObject({ kind: 'unsubscribe', emailId: id, index: 3 });
    expect(tokens.verify(`u+${u}`)).toMatchObject({ kind: 'unsubscribe', index: 3 });
    expect(`u+${u}`.length).toBeLessThanOrEqual(64);
    expect(tokens.verify(u.replace('.3.', '.4.'))).toBeUndefined();
    expect(tokens.unsubscribeMailto(id, 3, 'acme.test')).toBe(`mailto:u+${u}@pg-bounces.acme.test?subject=unsubscribe`);
    expect(parseToken('hello')).toBeUndefined();
  });

  it('rejected mail is retried a fixed number of times', () => {
    expect([1, 2, 3, 4].map((n) => rejectRetryDelay([60, 600, 3600], n))).toEqual([60, 600, 3600, undefined]);
  });
});

describe('DKIM', () => {
  it('signs relaxed/relaxed over the List-Unsubscribe pair and Feedback-ID, and verifies', async () => {
    const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const raw = Buffer.from(
      'From: Acme <hello@acme.test>\r\nTo: ann@inbox.test\r\nSubject: Hi\r\nDate: Sun, 01 Mar 2026 10:00:00 +0000\r\nMessage-ID: <x@acme.test>\r\n' +
        'List-Unsubscribe: <https://pg.test/unsubscribe/abc>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\nFeedback-ID: p1:bulk:postgate\r\n' +
        'MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello\r\n',
    );
    const signed = await signMessage(raw, { domain: 'acme.test', selector: 'pg202603', privateKeyPem: pem });
    const header = signed.toString().split('\r\n\r\n')[0]!;
    expect(header).toMatch(/^DKIM-Signature: v=1; a=rsa-sha256; c=relaxed\/relaxed; d=acme.test;/);
    const h = /\bh=([^;]+);/
      .exec(header.replace(/\r\n\s+/g, ''))![1]!
      .toLowerCase()
      .split(':')
      .map((x) => x.trim());
    expect(h).toEqual(
      expect.arrayContaining([
        'from',
        'to',
        'subject',
        'date',
        'message-id',
        'mime-version',
        'content-type',
        'list-unsubscribe',
        'list-unsubscribe-post',
        'feedback-id',
      ]),
    );
    const p = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    const verify = (m: Buffer) =>
      dkimVerify(m, {
        resolver: async (name: string) => {
          if (name === 'pg202603._domainkey.acme.test') return [[`v=DKIM1; k=rsa; p=${p}`]];
          throw Object.assign(new Error('nx'), { code: 'ENOTFOUND' });
        },
      } as never);
    const result = await verify(signed);
    expect(result.results[0]!.status.result).toBe('pass');

    // mailauth reads Date.now() for t= once for what it signs and once for what it writes: with
    // the time given explicitly, a second that ticks in between (every read here) changes nothing.
    let now = Date.now();
    const restore = realm.stubNow(() => (now += 700));
    let ticking: Buffer;
    try {
      ticking = await signMessage(raw, { domain: 'acme.test', selector: 'pg202603', privateKeyPem: pem });
    } finally {
      restore();
    }
    expect((await verify(ticking)).results[0]!.status.result).toBe('pass');
    await expect(signMessage(raw, { domain: 'acme.test', selector: 's', privateKeyPem: 'not a key' })).rejects.toThrow(
      /DKIM signing for acme.test \(s\) failed/,
    );

    // The gateway signs a message this small on its own thread, a larger one on a worker thread
    // (here every message, inlineBytes 0), and the results verify the same.
    const key = { domain: 'acme.test', selector: 'pg202603', privateKeyPem: pem };
    for (const [signer, threaded] of [
      [new Signer(), false],
      [new Signer(0), true],
      [new Signer(raw.length - 1), true],
    ] as const) {
      try {
        const [a, b] = await Promise.all([signer.sign(raw, key), signer.sign(raw, key)]);
        for (const m of [a, b]) expect((await verify(m)).results[0]!.status.result).toBe('pass');
        expect(a.subarray(a.indexOf('\r\n\r\n'))).toEqual(raw.subarray(raw.indexOf('\r\n\r\n')));
        await expect(signer.sign(raw, { ...key, privateKeyPem: 'not a key' })).rejects.toThrow(/DKIM signing for acme.test/);
        expect(signer.threaded).toBe(threaded);
      } finally {
        await signer.close();
      }
    }
  });
});

describe('reports that come back', () => {
  it('reads DSN fields, folded lines included', () => {
    const [msg, rcpt] = parseFieldBlocks(
      'Reporting-MTA: dns; mx.test\r\n\r\nFinal-Recipient: rfc822; Ann@Inbox.test\r\nDiagnostic-Code: smtp; 550 5.1.1\r\n  user unknown\r\n',
    );
    expect(msg!.get('reporting-mta')).toBe('dns; mx.test');
    expect(rcpt!.get('diagnostic-code')).toBe('smtp; 550 5.1.1 user unknown');
  });

  it('turns a DSN into bounced / rejected / deferred / delivered per recipient', async () => {
    const raw = dsn('b+x@pg-bounces.acme.test', [
      { recipient: 'gone@inbox.test', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 <gone@inbox.test>: user unknown' },
      { recipient: 'spam@inbox.test', action: 'failed', status: '5.7.1', diagnostic: '550 5.7.1 message refused as spam' },
      { recipient: 'slow@inbox.test', action: 'delayed', status: '4.2.2', diagnostic: '452 4.2.2 mailbox full' },
      { recipient: 'ok@inbox.test', action: 'delivered', status: '2.0.0' },
      { recipient: 'fwd@inbox.test', action: 'relayed', status: '2.0.0' },
    ]);
    const out = await readInbound(raw, 'b+0123456789abcdef0123456789abcdef.0123456789abcdef', 'MAILER-DAEMON@mx.inbox.test');
    expect(out.map((o) => [o.type, o.recipient, o.enhancedCode])).toEqual([
      ['bounced', 'gone@inbox.test', '5.1.1'],
      ['rejected', 'spam@inbox.test', '5.7.1'],
      ['deferred', 'slow@inbox.test', '4.2.2'],
      ['delivered', 'ok@inbox.test', '2.0.0'],
    ]);
    expect(out[0]).toMatchObject({ source: 'dsn', mx: 'mx.inbox.test', response: '550 5.1.1 <gone@inbox.test>: user unknown' });
  });

  it('turns an ARF abuse report into a complaint about its recipient; not-spam is none', async () => {
    const out = await readInbound(arf({ to: 'b+x@pg-bounces.acme.test', recipient: 'ann@inbox.test', feedbackType: 'abuse' }), 'b+x', 'fbl@inbox.test');
    expect(out).toEqual([
      { type: 'complained', recipient: 'ann@inbox.test', response: 'abuse report from TestFBL/1.0', enhancedCode: '', mx: '', source: 'arf' },
    ]);
    // Redacted recipient: taken from the attached original when it names one.
    const redacted = await readInbound(arf({ to: 'b+x@pg-bounces.acme.test', recipient: '', originalTo: 'bob@inbox.test', feedbackType: 'abuse' }), 'b+x', '');
    expect(redacted[0]).toMatchObject({ recipient: 'bob@inbox.test' });
    expect(await readInbound(arf({ to: 'b+x@x', recipient: 'ann@inbox.test', feedbackType: 'not-spam' }), 'b+x', '')).toEqual([]);
    expect(await readInbound(Buffer.from('Subject: Out of office\r\n\r\nI am away.\r\n'), 'b+x', 'ann@inbox.test')).toEqual([]);
    expect(await readInbound(Buffer.from('Subject: unsubscribe\r\n\r\n'), 'u+x', 'ann@inbox.test')).toMatchObject([{ type: 'unsubscribed', source: 'mailto' }]);
  });
});
