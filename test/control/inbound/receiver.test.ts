// control/inbound/receiver.ts on a real store: a RECEIVED event's message stored once however often the
// event comes (a control killed before its cursor moved sees it again), its email.received webhook queued
// once, an event without its message passed over, and a store that cannot write makes it throw (so the
// event stream keeps its cursor before the event).
import { create } from '@bufbuild/protobuf';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InboundReceiver, receivedMessage } from '../../../control/inbound/receiver.js';
import { createLogger } from '../../../core/log.js';
import { uuidv7 } from '../../../core/ids.js';
import { DeliveryEventSchema, EventType, InboundMailSchema } from '../../../proto/gen/postgate/gateway/v1/gateway_pb.js';
import { type UnitStore, unitStore } from '../../helpers/unit-store.js';

const log = createLogger('test', 'silent');
let u: UnitStore;
beforeEach(async () => {
  u = await unitStore();
});
afterEach(async () => u.close().catch(() => {}));

const event = (projectId: string, id = uuidv7(), raw = 'From: ann@sender.test\r\nTo: x@acme.test\r\nSubject: hi\r\n\r\nhello') =>
  create(DeliveryEventSchema, {
    seq: 7n,
    emailId: id,
    type: EventType.RECEIVED,
    atMs: BigInt(Date.parse('2026-11-29T10:00:00Z')),
    inbound: create(InboundMailSchema, {
      projectId,
      mailFrom: 'ann@sender.test',
      rcptTo: ['x@acme.test'],
      raw: Buffer.from(raw),
      remoteIp: '127.0.0.1',
      helo: 'mx.sender.test',
      spf: 'pass',
      dkim: 'none',
      dmarc: 'none',
      authenticationResults: 'mx; spf=pass',
      authJson: '{}',
    }),
  });

describe('receivedMessage', () => {
  it('the event in plain fields; undefined without a message, a project or an id', () => {
    const e = event('prj_acme', 'id-1');
    expect(receivedMessage(e)).toMatchObject({
      id: 'id-1',
      projectId: 'prj_acme',
      rcptTo: ['x@acme.test'],
      spf: 'pass',
      atMs: Date.parse('2026-11-29T10:00:00Z'),
    });
    expect(receivedMessage(create(DeliveryEventSchema, { emailId: 'x', type: EventType.RECEIVED }))).toBeUndefined();
    expect(receivedMessage({ ...e, emailId: '' })).toBeUndefined();
    expect(receivedMessage(event(''))).toBeUndefined();
  });
});

describe('InboundReceiver', () => {
  it('stores the message once and queues its webhook once, however often the event comes', async () => {
    const hook = { id: 'wh1', projectId: u.project.id, url: 'https://hooks.test/in', statuses: ['email.received'], secret: 'sealed', createdAt: Date.now() };
    await u.store.webhooks.create(hook);
    const r = new InboundReceiver(u.store, log);
    const e = event(u.project.id);
    await r.receive([e]);
    await r.receive([e]);
    const got = await u.store.inbound.get(u.project.id, e.emailId);
    expect(got).toMatchObject({ subject: 'hi', from: 'ann@sender.test', rcptTo: ['x@acme.test'], text: 'hello' });
    const deliveries = await u.store.webhooks.deliveries(hook.id);
    expect(deliveries).toHaveLength(1);
    expect(JSON.parse(deliveries[0]!.payload)).toMatchObject({
      type: 'email.received',
      data: { email_id: e.emailId, subject: 'hi', received_for: ['x@acme.test'] },
    });
  });

  it('passes over an event without its message (pruned, or from another build) and stores the rest', async () => {
    const r = new InboundReceiver(u.store, log);
    const good = event(u.project.id);
    await r.receive([create(DeliveryEventSchema, { emailId: 'gone', type: EventType.RECEIVED }), good]);
    expect(await u.store.inbound.get(u.project.id, good.emailId)).toBeDefined();
  });

  it('a message with nothing to parse is stored all the same, raw kept', async () => {
    const r = new InboundReceiver(u.store, log);
    const e = event(u.project.id, uuidv7(), '\u0000\u0001 not a message at all');
    await r.receive([e]);
    const got = await u.store.inbound.get(u.project.id, e.emailId);
    expect(got).toMatchObject({ from: 'ann@sender.test', rcptTo: ['x@acme.test'] });
    expect(Buffer.from((await u.store.inbound.raw(u.project.id, e.emailId))!).toString()).toContain('not a message at all');
  });

  it('throws when the store cannot write, so the stream keeps its cursor before the event', async () => {
    const r = new InboundReceiver(u.store, log);
    await u.store.close();
    await expect(r.receive([event(u.project.id)])).rejects.toThrow();
  });
});
