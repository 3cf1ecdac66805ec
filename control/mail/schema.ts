// JSON schemas of the mail API: they validate requests and describe the API in
// the OpenAPI document. Semantic checks (address syntax, header names) follow
// in the pipeline, so SMTP and gRPC submissions get them too.
import { EMAIL_STATUSES } from '../../common/status.js';

const noLineBreaks = '^[^\\r\\n]*$';
const addressString = { type: 'string', minLength: 3, maxLength: 320, pattern: noLineBreaks } as const;

export function sendRequestSchema(limits: { maxRecipients: number; maxBodyBytes: number; maxSubjectLength: number; maxHeaders: number; maxTags: number }) {
  const addressList = { type: 'array', items: addressString, minItems: 1, maxItems: limits.maxRecipients } as const;
  return {
    $id: 'SendEmailRequest',
    type: 'object',
    additionalProperties: false,
    required: ['from', 'to', 'subject'],
    anyOf: [{ required: ['html'] }, { required: ['text'] }],
    properties: {
      from: { ...addressString, description: 'Sender, `a@b.c` or `Name <a@b.c>`; its domain must be verified for the project.' },
      to: { description: 'One recipient or a list; at most 50 recipients in to, cc and bcc together.', anyOf: [addressString, addressList] },
      subject: { type: 'string', maxLength: limits.maxSubjectLength, pattern: noLineBreaks },
      html: { type: 'string', maxLength: limits.maxBodyBytes },
      text: { type: 'string', maxLength: limits.maxBodyBytes },
      cc: addressList,
      bcc: addressList,
      reply_to: { anyOf: [addressString, addressList] },
      tags: {
        type: 'array',
        maxItems: limits.maxTags,
        items: { type: 'string', minLength: 1, maxLength: 100, pattern: '^[^\\r\\n\\u0000]*$' },
        description: 'Kept with the email, never put in the message.',
      },
      headers: {
        type: 'object',
        maxProperties: limits.maxHeaders,
        propertyNames: { pattern: '^[!-9;-~]{1,76}$' },
        additionalProperties: { type: 'string', maxLength: 998, pattern: noLineBreaks },
      },
      bulk: { type: 'boolean', description: 'true marks a bulk mailing (List-Unsubscribe, unsubscribes apply); omitted = transactional.' },
    },
  } as const;
}

export const sendResponseSchema = {
  type: 'object',
  required: ['id', 'status'],
  properties: { id: { type: 'string' }, status: { type: 'string', enum: ['queued'] } },
} as const;

export const emailSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    status: { type: 'string', enum: [...EMAIL_STATUSES] },
    from: { type: 'string' },
    to: { type: 'array', items: { type: 'string' } },
    cc: { type: 'array', items: { type: 'string' } },
    bcc: { type: 'array', items: { type: 'string' } },
    reply_to: { type: 'array', items: { type: 'string' } },
    subject: { type: 'string' },
    tags: { type: 'array', items: { type: 'string' } },
    bulk: { type: 'boolean' },
    created_at: { type: 'string' },
    updated_at: { type: 'string' },
    error: { type: 'object', nullable: true, properties: { error: { type: 'string' }, code: { type: 'string' } } },
    recipients: {
      type: 'array',
      items: {
        type: 'object',
        properties: { email: { type: 'string' }, kind: { type: 'string' }, status: { type: 'string' }, updated_at: { type: 'string' } },
      },
    },
    events: {
      type: 'array',
      items: {
        type: 'object',
        required: ['type', 'at'],
        additionalProperties: true,
        properties: {
          type: { type: 'string' },
          at: { type: 'string' },
          recipient: { type: 'string' },
          attempt: { type: 'integer' },
          mx: { type: 'string' },
          response: { type: 'string' },
          enhanced_code: { type: 'string' },
          next_attempt_at: { type: 'string' },
          reason: { type: 'string' },
          code: { type: 'string' },
        },
      },
    },
  },
} as const;
