// control/unsubscribe/routes.ts on a real store, through the project's Fastify setup: a one-click
// unsubscribe (RFC 8058) is a POST of a link whose MAC is right; a GET (link scanners) only shows a
// page; the page cannot be framed; a forged, foreign or cut link unsubscribes nobody.
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newFastify } from '../../../control/http/fastify.js';
import { Registry } from '../../../core/metrics.js';
import type { NewEmail } from '../../../control/store/index.js';
import { unsubscribeRoutes } from '../../../control/unsubscribe/routes.js';
import { MailTokens } from '../../../control/unsubscribe/mail-tokens.js';
import { loadConfig } from '../../../core/config.js';
import { uuidv7 } from '../../../core/ids.js';
import { createLogger } from '../../../core/log.js';
import { unitStore, type UnitStore } from '../../helpers/unit-store.js';

const tokens = new MailTokens('unsubscribe secret');
let u: UnitStore;
let app: FastifyInstance;
let emailId: string;

beforeEach(async () => {
  u = await unitStore();
  app = newFastify({ config: loadConfig({}), log: createLogger('test', 'silent'), metrics: new Registry() });
  await app.register(unsubscribeRoutes, { store: u.store, tokens });
  await app.ready();
  emailId = uuidv7();
  const email: NewEmail = {
    id: emailId,
    projectId: u.project.id,
    status: 'queued',
    from: 'news@acme.test',
    subject: 'News',
    bulk: true,
    createdAt: Date.now(),
    request: JSON.stringify({
      from: 'news@acme.test',
      to: ['ann@inbox.test', 'bob@inbox.test'],
      cc: [],
      bcc: [],
      reply_to: [],
      subject: 'News',
      text: 'hi',
      tags: [],
      headers: {},
      bulk: true,
    }),
    recipients: [
      { address: 'ann@inbox.test', kind: 'to' },
      { address: 'bob@inbox.test', kind: 'to' },
    ],
  };
  expect(await u.store.emails.accept(email)).toMatchObject({ kind: 'accepted' });
});

afterEach(async () => {
  await app.close();
  await u.close();
});

const suppressed = async () => (await u.store.suppressions.list(u.project.id)).map((s) => [s.address, s.scope]);
const oneClick = (token: string, accept = 'text/html') =>
  app.inject({
    method: 'POST',
    url: `/unsubscribe/${token}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept },
    payload: 'List-Unsubscribe=One-Click',
  });

describe('GET: the confirmation page', () => {
  it('names the project and a masked address, offers a button, and unsubscribes nobody', async () => {
    const res = await app.inject({ method: 'GET', url: `/unsubscribe/${tokens.unsubscribeToken(emailId, 1)}`, headers: { accept: 'text/html' } });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<b>Acme</b>');
    expect(res.body).toContain('b**@inbox.test');
    expect(res.body).not.toContain('bob@inbox.test');
    expect(res.body).toContain('<form method="post">');
    expect(await suppressed()).toEqual([]);
  });

  it('cannot be framed, cached or read with a referrer', async () => {
    const res = await app.inject({ method: 'GET', url: `/unsubscribe/${tokens.unsubscribeToken(emailId, 0)}` });
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
  });
});

describe('POST: one click', () => {
  it('unsubscribes the recipient the link names from bulk mail, once, whatever the body says', async () => {
    const res = await oneClick(tokens.unsubscribeToken(emailId, 1));
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('will get no more mailings');
    expect(await suppressed()).toEqual([['bob@inbox.test', 'bulk']]);
    expect((await oneClick(tokens.unsubscribeToken(emailId, 1))).statusCode).toBe(200);
    expect(await suppressed()).toEqual([['bob@inbox.test', 'bulk']]);
  });

  it('a forged MAC, a recipient the email does not have, another email or a bounce token: nobody is unsubscribed', async () => {
    const good = tokens.unsubscribeToken(emailId, 0);
    const bad = [
      `${good.slice(0, -1)}${good.endsWith('0') ? '1' : '0'}`,
      tokens.unsubscribeToken(emailId, 5),
      tokens.unsubscribeToken(uuidv7(), 0),
      new MailTokens('another secret').unsubscribeToken(emailId, 0),
      tokens.verpAddress(emailId, 0, 'acme.test').split('@')[0]!,
      good.slice(0, 40),
    ];
    for (const token of bad) {
      const page = await oneClick(token);
      expect(page.statusCode, token).toBe(404);
      expect(page.body).toContain('not valid');
      const api = await oneClick(token, 'application/json');
      expect(api.statusCode).toBe(404);
      expect(api.json()).toMatchObject({ code: 'NOT_FOUND' });
    }
    expect(await suppressed()).toEqual([]);
  });

  it('a token longer than any link is refused before the store is asked', async () => {
    expect((await oneClick('a'.repeat(81), 'application/json')).statusCode).toBe(400);
  });
});
