// A whole stack (supervisor, control, gateway) on PostgreSQL instead of SQLite, started as an
// operator starts it: REST → control → PostgreSQL → gateway → the recipient's MX over loopback DNS,
// and the events back to GET /v1/emails/:id; a bounce that suppresses; data that outlives control.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Project } from '../../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, replies, type MxSink, messageIdOf } from '../../helpers/mx-sink.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/cluster.js';

describe('a whole stack on PostgreSQL', () => {
  let db: TestDatabase;
  let dns: DnsServer;
  let sink: MxSink;
  let stack: Stack;
  let p: Project;
  const sentTo = (id: string) => sink.messages.filter((m) => messageIdOf(m) === id);

  beforeAll(async () => {
    db = await createTestDatabase('pg_test');
    sink = await startMxSink();
    dns = await startDnsServer([
      { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
      { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
    ]);
    stack = await Stack.start({
      env: {
        POSTGATE_DATABASE_URL: db.url,
        POSTGATE_SECRET: crypto.randomBytes(32).toString('hex'),
        POSTGATE_DNS_SERVERS: dns.address,
        POSTGATE_DELIVERY_PORT: String(sink.port),
      },
      config: { delivery: { retryDelays: [1], maxTempFailures: 5, connectTimeout: 5 } },
    });
    p = await stack.createProject('pgdeliver');
    await stack.setPlan('pgdeliver', 'scale');
    await stack.verifyDomain('pgdeliver', 'acme.test');
  });
  afterAll(async () => {
    await stack?.stop();
    await sink?.close();
    await dns?.close();
    await db?.drop();
  });

  it('an email goes end to end: 202, one copy per recipient at the MX, queued → sending → sent in its events', async () => {
    const r = await stack.api('POST', '/v1/emails', p.keys.live, {
      from: 'Acme <hello@acme.test>',
      to: ['ann@inbox.test', 'bob@inbox.test'],
      subject: 'Hello from PostgreSQL',
      text: 'Plain body',
    });
    expect(r.status).toBe(202);
    const email = await stack.waitEmail(p.keys.live, r.body.id, (e) => e.status === 'sent');
    expect(
      sentTo(r.body.id)
        .flatMap((m) => m.rcptTo)
        .sort(),
    ).toEqual(['ann@inbox.test', 'bob@inbox.test']);
    expect(email.events.map((e: any) => e.type)).toEqual(expect.arrayContaining(['queued', 'sending', 'sent']));
    expect(email.recipients.every((x: any) => x.status === 'sent')).toBe(true);
    // The data is in PostgreSQL: no SQLite database in the data dir.
    expect(fs.existsSync(path.join(stack.dataDir, 'postgate.db'))).toBe(false);
  });

  it('a batch is stored and sent; a 550 bounces and suppresses the address', async () => {
    sink.setBehaviour('gone@inbox.test', { rcpt: [replies.noSuchUser, replies.noSuchUser, replies.noSuchUser] });
    const batch = await stack.api('POST', '/v1/emails/batch', p.keys.live, [
      { from: 'hello@acme.test', to: 'one@inbox.test', subject: 'b1', text: 'x' },
      { from: 'hello@acme.test', to: 'gone@inbox.test', subject: 'b2', text: 'x' },
    ]);
    expect(batch.status).toBe(202);
    const [ok, gone] = batch.body.data;
    await stack.waitEmail(p.keys.live, ok.id, (e) => e.status === 'sent');
    await stack.waitEmail(p.keys.live, gone.id, (e) => e.status === 'bounced');
    const again = await stack.api('POST', '/v1/emails', p.keys.live, { from: 'hello@acme.test', to: 'gone@inbox.test', subject: 'x', text: 'x' });
    expect(again.status).toBe(422);
    expect(again.body.code).toBe('RECIPIENT_IN_SUPPRESSION_LIST');
  });

  it('control killed and restarted by the supervisor finds every email, and delivers what was queued once', async () => {
    const r = await stack.api('POST', '/v1/emails', p.keys.live, { from: 'hello@acme.test', to: 'late@inbox.test', subject: 'restart', text: 'x' });
    expect(r.status).toBe(202);
    const old = stack.kill('control');
    await stack.waitRestart('control', old);
    await stack.waitEmail(p.keys.live, r.body.id, (e) => e.status === 'sent');
    expect(sentTo(r.body.id)).toHaveLength(1);
  });
});
