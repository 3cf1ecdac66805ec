// gateway/dkim.ts: DKIM signing (relaxed/relaxed, over the List-Unsubscribe pair and Feedback-ID),
// verified with mailauth's verifier, on the event loop and on a worker thread.
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { signMessage, Signer } from '../../gateway/dkim.js';

const realm = createRequire(import.meta.url)('../helpers/realm-clock.cjs') as { stubNow(fn: () => number): () => void };

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
