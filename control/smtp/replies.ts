// SMTP replies for the pipeline's refusals. Temporary conditions (rates,
// quotas) are 4xx so a client retries later; policy refusals are 5xx 5.7.x;
// bad recipients 5.1.x; a bad message 550 5.6.0. The text always carries the
// API's error code and, when the email was recorded as failed, its id.
import type { ErrorCode } from '../../core/errors.js';
import { ApiError } from '../../core/errors.js';

interface Reply {
  code: number;
  enhanced: string;
}

const replies: Partial<Record<ErrorCode, Reply>> = {
  RATE_LIMIT_EXCEEDED: { code: 451, enhanced: '4.7.1' },
  QUOTA_EXCEEDED: { code: 451, enhanced: '4.7.1' },
  BULK_LIMIT_EXCEEDED: { code: 451, enhanced: '4.7.1' },
  DOMAIN_NOT_VERIFIED: { code: 550, enhanced: '5.7.1' },
  SENDING_PAUSED: { code: 550, enhanced: '5.7.1' },
  SUBSCRIPTION_REQUIRED: { code: 550, enhanced: '5.7.1' },
  INVALID_API_KEY: { code: 535, enhanced: '5.7.8' },
  RECIPIENT_IN_SUPPRESSION_LIST: { code: 550, enhanced: '5.1.1' },
  INVALID_REQUEST: { code: 550, enhanced: '5.6.0' },
  PAYLOAD_TOO_LARGE: { code: 552, enhanced: '5.3.4' },
  // Nothing was stored: the client keeps the message and tries again.
  STORE_UNAVAILABLE: { code: 451, enhanced: '4.3.0' },
  // The idempotency key was used with another message: resending will not help (docs/mail-api.md).
  IDEMPOTENCY_CONFLICT: { code: 550, enhanced: '5.6.0' },
  // The first submission with this key is still being accepted: try again shortly.
  IDEMPOTENCY_IN_PROGRESS: { code: 451, enhanced: '4.3.0' },
};

export type SmtpError = Error & { responseCode: number };

/** An error smtp-server answers with `<code> <enhanced> <CODE>: <message>[ (id <id>)]`. */
export function smtpReply(code: number, enhanced: string, text: string): SmtpError {
  return Object.assign(new Error(`${enhanced} ${text}`), { responseCode: code });
}

export function smtpError(err: unknown): SmtpError {
  if (!(err instanceof ApiError)) return smtpReply(451, '4.3.0', 'INTERNAL: Temporary failure; try again later');
  const r = replies[err.code] ?? (err.status >= 500 ? { code: 451, enhanced: '4.3.0' } : { code: 550, enhanced: '5.7.0' });
  const id = typeof err.extra.id === 'string' ? ` (id ${err.extra.id})` : '';
  // One line: the message may quote user input, and smtp-server only blanks control characters as a backstop.
  const message = err.message.replace(/[\r\n\0]+/g, ' ').slice(0, 400);
  return smtpReply(r.code, r.enhanced, `${err.code}: ${message}${id}`);
}

/** Invalid request errors for recipients get 5.1.x; used where the offending address is known. */
export const badRecipient = (address: string): SmtpError =>
  smtpReply(553, '5.1.3', `INVALID_REQUEST: Bad recipient address ${JSON.stringify(address.slice(0, 100))}`);
