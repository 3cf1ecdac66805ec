// control/smtp/replies.ts: the pipeline's refusals as SMTP replies: temporary conditions 4xx (the
// client retries), policy 5xx 5.7.x, bad recipients 5.1.x, a bad message 550 5.6.0; always the
// API's code, the failed email's id, and one line whatever the message quotes.
import { describe, expect, it } from 'vitest';
import { badRecipient, smtpError, smtpReply } from '../../../control/smtp/replies.js';
import { ApiError, type ErrorCode } from '../../../core/errors.js';

const reply = (code: ErrorCode, message = 'm', extra: Record<string, unknown> = {}) => {
  const e = smtpError(new ApiError(code, message, extra));
  return `${e.responseCode} ${e.message}`;
};

describe('smtpError', () => {
  it.each([
    ['RATE_LIMIT_EXCEEDED', '451 4.7.1'],
    ['QUOTA_EXCEEDED', '451 4.7.1'],
    ['BULK_LIMIT_EXCEEDED', '451 4.7.1'],
    ['STORE_UNAVAILABLE', '451 4.3.0'],
    ['IDEMPOTENCY_IN_PROGRESS', '451 4.3.0'],
    ['DOMAIN_NOT_VERIFIED', '550 5.7.1'],
    ['SENDING_PAUSED', '550 5.7.1'],
    ['SUBSCRIPTION_REQUIRED', '550 5.7.1'],
    ['INVALID_API_KEY', '535 5.7.8'],
    ['RECIPIENT_IN_SUPPRESSION_LIST', '550 5.1.1'],
    ['INVALID_REQUEST', '550 5.6.0'],
    ['IDEMPOTENCY_CONFLICT', '550 5.6.0'],
    ['PAYLOAD_TOO_LARGE', '552 5.3.4'],
    // Without a reply of their own: a 5xx status is temporary, anything else a policy refusal.
    ['SERVER_BUSY', '451 4.3.0'],
    ['NOT_FOUND', '550 5.7.0'],
  ] as Array<[ErrorCode, string]>)('%s → %s', (code, start) => {
    expect(reply(code)).toBe(`${start} ${code}: m`);
  });

  it('names the email recorded as failed', () => {
    expect(reply('RECIPIENT_IN_SUPPRESSION_LIST', 'All recipients are suppressed', { id: 'e-1' })).toBe(
      '550 5.1.1 RECIPIENT_IN_SUPPRESSION_LIST: All recipients are suppressed (id e-1)',
    );
  });

  it('keeps a message that quotes user input on one line, and short', () => {
    const r = reply('INVALID_REQUEST', `bad header "x\r\n250 OK\r\n\0"${'y'.repeat(1000)}`);
    expect(r).not.toMatch(/[\r\n\0]/);
    expect(r.length).toBeLessThan(450);
  });

  it('anything but an ApiError is a temporary internal failure, saying nothing of it', () => {
    const e = smtpError(new Error('SQLITE_CORRUPT: secret detail'));
    expect(`${e.responseCode} ${e.message}`).toBe('451 4.3.0 INTERNAL: Temporary failure; try again later');
  });
});

it('smtpReply and badRecipient', () => {
  expect(smtpReply(421, '4.7.0', 'Too many connections')).toMatchObject({ responseCode: 421, message: '4.7.0 Too many connections' });
  const e = badRecipient(`a"b${'c'.repeat(200)}`);
  expect(e.responseCode).toBe(553);
  // JSON-quoted, cut to 100 characters of the address.
  expect(e.message).toBe(`5.1.3 INVALID_REQUEST: Bad recipient address ${JSON.stringify(`a"b${'c'.repeat(97)}`)}`);
});
