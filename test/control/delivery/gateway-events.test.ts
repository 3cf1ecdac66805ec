// control/delivery/gateway-events.ts, toGatewayEvent: a gateway's event as control records it. A
// report that came back to one of our addresses is believed only when its MAC is right and names
// this email; then the return path, not the report, says which recipient it concerns.
import crypto from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { toGatewayEvent } from '../../../control/delivery/gateway-events.js';
import { MailTokens } from '../../../control/unsubscribe/mail-tokens.js';
import { deriveKey } from '../../../core/crypto.js';
import { eventCauseOf, eventSourceOf, eventTypeOf, type EventTypeName } from '../../../proto/events.js';
import { DeliveryEventSchema, EventType } from '../../../proto/gen/postgate/gateway/v1/gateway_pb.js';

const tokens = new MailTokens('the master secret');
const ID = crypto.randomUUID();
const OTHER = crypto.randomUUID();

const event = (type: EventTypeName, o: Record<string, unknown> = {}) =>
  create(DeliveryEventSchema, {
    seq: 7n,
    emailId: ID,
    type: eventTypeOf(type),
    recipient: 'ann@inbox.test',
    atMs: BigInt(Date.parse('2026-03-01T10:00:00Z')),
    attempt: 2,
    ...o,
  });
const local = (address: string) => address.split('@')[0]!;

describe('an SMTP outcome', () => {
  it('keeps what was said, in the details, and only what was said', () => {
    const e = toGatewayEvent(
      event('deferred', {
        mx: 'mx.inbox.test',
        response: '451 4.7.1 Try later',
        enhancedCode: '4.7.1',
        nextAttemptMs: BigInt(Date.parse('2026-03-01T10:05:00Z')),
        cause: eventCauseOf('receiver'),
        provider: 'google',
      }),
      tokens,
    );
    expect(e).toEqual({
      seq: 7,
      emailId: ID,
      type: 'deferred',
      recipient: 'ann@inbox.test',
      at: Date.parse('2026-03-01T10:00:00Z'),
      attempt: 2,
      details: {
        mx: 'mx.inbox.test',
        response: '451 4.7.1 Try later',
        enhanced_code: '4.7.1',
        next_attempt_at: '2026-03-01T10:05:00.000Z',
        cause: 'receiver',
        provider: 'google',
      },
    });
    expect(toGatewayEvent(event('sent'), tokens).details).toEqual({});
  });

  it('a pacing deferral to another day is an event of its own (deduplicated by when it is due)', () => {
    const e = toGatewayEvent(event('deferred', { cause: eventCauseOf('pacing'), nextAttemptMs: BigInt(Date.parse('2026-03-02T00:00:00Z')) }), tokens);
    expect(e.dedupe).toBe('pacing:2026-03-02T00:00:00.000Z');
    expect(toGatewayEvent(event('deferred', { cause: eventCauseOf('receiver'), nextAttemptMs: 5n }), tokens).dedupe).toBeUndefined();
  });

  it('a shaping or suspension hold keeps its rule in the details and is one event per rule and end', () => {
    const until = BigInt(Date.parse('2026-03-02T01:00:00Z'));
    const e = toGatewayEvent(event('deferred', { cause: eventCauseOf('shaping'), rule: 'yahoo-complaints', nextAttemptMs: until }), tokens);
    expect(e.details).toMatchObject({ cause: 'shaping', rule: 'yahoo-complaints', next_attempt_at: '2026-03-02T01:00:00.000Z' });
    expect(e.dedupe).toBe('shaping:yahoo-complaints:2026-03-02T01:00:00.000Z');
    // An operator's suspension until resumed has no end.
    const s = toGatewayEvent(event('deferred', { cause: eventCauseOf('suspended'), rule: 'operator:s1', nextAttemptMs: 0n }), tokens);
    expect(s.details).toMatchObject({ cause: 'suspended', rule: 'operator:s1' });
    expect(s.details.next_attempt_at).toBeUndefined();
    expect(s.dedupe).toBe('suspended:operator:s1:');
    expect(toGatewayEvent(event('deferred', { cause: eventCauseOf('receiver') }), tokens).details.rule).toBeUndefined();
  });

  it('a type this control does not know (a gateway of another build) stops the consumer', () => {
    expect(() => toGatewayEvent(create(DeliveryEventSchema, { seq: 9n, emailId: ID, type: 99 as EventType }), tokens)).toThrow(
      /type this control does not know/,
    );
    expect(() => toGatewayEvent(create(DeliveryEventSchema, { seq: 9n, emailId: ID, type: EventType.UNSPECIFIED }), tokens)).toThrow();
  });
});

describe('a report that came back (DSN, ARF, unsubscribe mail)', () => {
  const report = (token: string, o: Record<string, unknown> = {}) =>
    event('bounced', { token, source: eventSourceOf('dsn'), recipient: 'someone-else@inbox.test', ...o });

  it('with a right MAC: about the recipient its return path names, whatever the report said', () => {
    const e = toGatewayEvent(report(local(tokens.verpAddress(ID, 3, 'acme.test'))), tokens);
    expect(e).toMatchObject({ emailId: ID, recipient: '', recipientIndex: 3, details: { source: 'dsn' } });
    expect(e.soleRecipient).toBeUndefined();
  });

  it('an unsubscribe mail’s token names its recipient too', () => {
    const e = toGatewayEvent(event('unsubscribed', { token: `u+${tokens.unsubscribeToken(ID, 1)}`, source: eventSourceOf('mailto') }), tokens);
    expect(e).toMatchObject({ emailId: ID, recipientIndex: 1, recipient: '' });
  });

  it('a return path from before they named a recipient: believed only for an email with one recipient', () => {
    const hex = ID.replace(/-/g, '');
    const mac = crypto.createHmac('sha256', deriveKey('the master secret', 'mail-tokens')).update(`b:${hex}`).digest('hex').slice(0, 16);
    const e = toGatewayEvent(report(`b+${hex}.${mac}`), tokens);
    expect(e).toMatchObject({ emailId: ID, recipientIndex: 0, recipient: '', soleRecipient: true });
  });

  it('a forged MAC, another email’s token or a token that is no token: kept out (the cursor still moves past it)', () => {
    const good = local(tokens.verpAddress(ID, 0, 'acme.test'));
    const forged = `${good.slice(0, -1)}${good.endsWith('0') ? '1' : '0'}`;
    for (const token of [
      forged,
      local(tokens.verpAddress(OTHER, 0, 'acme.test')),
      local(new MailTokens('another secret').verpAddress(ID, 0, 'acme.test')),
      'hello',
    ]) {
      const e = toGatewayEvent(report(token), tokens);
      expect(e.emailId, token).toBe('');
      expect(e.seq).toBe(7);
    }
  });
});
