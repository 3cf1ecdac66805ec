// JSON schemas of the mail API: they validate requests and describe the API in
// the OpenAPI document. Semantic checks (address syntax, header names) follow
// in the pipeline, so SMTP and gRPC submissions get them too.
import { EMAIL_STATUSES } from '../../common/status.js';
import { attachmentsSchema } from './attachments.js';
import type { ErrorObject } from 'ajv';
import type { Limits } from '../../core/config.js';
import { templateRefSchema } from '../templates/schema.js';

const noLineBreaks = '^[^\\r\\n]*$';
const addressString = { type: 'string', minLength: 3, maxLength: 320, pattern: noLineBreaks } as const;

// Resend's tag: ASCII letters, digits, `_` and `-`, at most 256 each.
const tagPart = { type: 'string', minLength: 1, maxLength: 256, pattern: '^[A-Za-z0-9_-]+$' } as const;
const resendTag = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'value'],
  properties: { name: tagPart, value: tagPart },
} as const;

/** scheduled_at on a send and on PATCH /v1/emails/:id; what it may say is checked by scheduledTime (pipeline.ts). */
export const scheduledAtSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 64,
  description:
    'When the email leaves, at most 30 days ahead: an ISO 8601 date-time with a zone, or a time in words as Resend takes them ("in 1 min", "in 2 hours", "tomorrow at 9am", "friday at 3pm ET", "next monday at 09:30 Europe/Berlin"; UTC unless a zone is given). The email is `scheduled` until then; a past time sends at once.',
} as const;

export function sendRequestSchema(limits: Limits) {
  const addressList = { type: 'array', items: addressString, minItems: 1, maxItems: limits.maxRecipients } as const;
  const properties = {
    from: { ...addressString, description: 'Sender, `a@b.c` or `Name <a@b.c>`; its domain must be verified for the project.' },
    to: { description: 'One recipient or a list; at most 50 recipients in to, cc and bcc together.', anyOf: [addressString, addressList] },
    subject: { type: 'string', maxLength: limits.maxSubjectLength, pattern: noLineBreaks },
    html: { type: 'string', maxLength: limits.maxBodyBytes },
    text: { type: 'string', maxLength: limits.maxBodyBytes },
    // A single address may be given as a string, as Resend and its SDK allow.
    cc: { anyOf: [addressString, addressList] },
    bcc: { anyOf: [addressString, addressList] },
    reply_to: { anyOf: [addressString, addressList] },
    tags: {
      type: 'array',
      maxItems: limits.maxTags,
      items: { anyOf: [{ type: 'string', minLength: 1, maxLength: 100, pattern: '^[^\\r\\n\\u0000]*$' }, resendTag] },
      description: 'Kept with the email, never put in the message. A tag is a string, or `{name, value}` as in Resend (kept as `name:value`).',
    },
    headers: {
      type: 'object',
      maxProperties: limits.maxHeaders,
      propertyNames: { pattern: '^[!-9;-~]{1,76}$' },
      additionalProperties: { type: 'string', maxLength: 998, pattern: noLineBreaks },
    },
    bulk: { type: 'boolean', description: 'true marks a bulk mailing (List-Unsubscribe, unsubscribes apply); omitted = transactional.' },
    attachments: attachmentsSchema(limits),
    scheduled_at: scheduledAtSchema,
    tracking: {
      type: 'object',
      additionalProperties: false,
      properties: { open: { type: 'boolean' }, click: { type: 'boolean' } },
      description: "Open and click tracking for this email, over its sender domain's open_tracking and click_tracking (each omitted: the domain's).",
    },
    template: templateRefSchema(limits),
  } as const;
  const { template, ...plain } = properties;
  const { html, text, ...templated } = properties;
  // Two forms, each typed whole in the OpenAPI document (a client generated from it requires from and
  // subject unless a template is named): from, subject and html or text; or a template (control/templates),
  // whose published version gives html and text, and from and subject when the request has none.
  return {
    $id: 'SendEmailRequest',
    type: 'object',
    anyOf: [
      {
        type: 'object',
        additionalProperties: false,
        required: ['from', 'to', 'subject'],
        anyOf: [{ required: ['html'] }, { required: ['text'] }],
        properties: plain,
      },
      { type: 'object', additionalProperties: false, required: ['to', 'template'], properties: templated },
    ],
  } as const;
}

/**
 * What a send request's schema refusal says: the first error of the form the request has (the plain
 * form's unless it names a template), not every error of both forms; an unknown field is named.
 */
export function sendSchemaError(errors: readonly ErrorObject[]): { path: string; message: string } {
  const hasTemplate = !errors.some((e) => e.schemaPath.startsWith('#/anyOf/1/') && e.keyword === 'required' && e.params.missingProperty === 'template');
  const e = errors.find((x) => x.schemaPath.startsWith(hasTemplate ? '#/anyOf/1/' : '#/anyOf/0/')) ?? errors[0];
  if (!e) return { path: '', message: 'is invalid' };
  const extra = e.keyword === 'additionalProperties' ? `: ${String(e.params.additionalProperty)}` : '';
  return { path: e.instancePath, message: `${e.message ?? 'is invalid'}${extra}` };
}

export const sendResponseSchema = {
  type: 'object',
  required: ['id', 'status'],
  properties: { id: { type: 'string' }, status: { type: 'string', enum: ['queued', 'scheduled'] } },
} as const;

const nullableString = { type: ['string', 'null'] } as const;

/** What an email has in a list and in its own view (the spec's fields, then Resend's). */
const emailSummary = {
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
  scheduled_at: { ...nullableString, description: 'When a scheduled email leaves; null when sent at once.' },
  last_event: {
    type: 'string',
    description:
      "Resend's name for the latest state (queued, scheduled, sent, delivered, delivery_delayed, bounced, complained, failed, suppressed, canceled; opened or clicked once a person opened or clicked a delivered email).",
  },
  message_id: { ...nullableString, description: 'The Message-ID header the email carries.' },
} as const;

export const emailListSchema = {
  type: 'object',
  required: ['object', 'has_more', 'data'],
  properties: {
    object: { type: 'string', enum: ['list'] },
    has_more: { type: 'boolean' },
    data: { type: 'array', items: { type: 'object', properties: emailSummary } },
  },
} as const;

export const emailListQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    // Query strings are not coerced (control/http/fastify.ts): a number arrives as digits.
    limit: { type: 'string', pattern: '^(100|[1-9][0-9]?)$', description: '1 to 100; 20 when omitted.' },
    after: { type: 'string', maxLength: 100, description: 'An email id: the page of emails older than it.' },
    before: { type: 'string', maxLength: 100, description: 'An email id: the page of emails newer than it.' },
    status: { type: 'string', enum: [...EMAIL_STATUSES] },
    tag: { type: 'string', minLength: 1, maxLength: 513, description: 'Emails carrying this tag (`name:value` for a `{name, value}` tag).' },
    since: { type: 'string', maxLength: 40, description: 'Created at or after this ISO 8601 date-time.' },
    until: { type: 'string', maxLength: 40, description: 'Created at or before this ISO 8601 date-time.' },
  },
} as const;

const trackingCount = {
  type: 'object',
  properties: {
    link: { type: 'string' },
    count: { type: 'integer' },
    bots: { type: 'integer' },
    first_at: nullableString,
    last_at: nullableString,
  },
} as const;

export const emailSchema = {
  type: 'object',
  properties: {
    ...emailSummary,
    object: { type: 'string', enum: ['email'] },
    html: nullableString,
    text: nullableString,
    attachments: {
      type: 'array',
      description: 'The files sent with it; never their content.',
      items: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          filename: { type: 'string' },
          content_type: { type: 'string' },
          content_id: { type: 'string' },
          size: { type: 'integer' },
        },
      },
    },
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
          link: { type: 'string', description: 'clicked: the original URL of the link.' },
          user_agent: { type: 'string', description: 'opened, clicked: the client that fetched.' },
          ip: { type: 'string', description: 'opened, clicked: its network, never the whole address (an IPv4 /24, an IPv6 /48).' },
          bot: { type: 'boolean', description: 'opened, clicked: it looks like a machine (a scanner, Apple Mail Privacy Protection), not a person.' },
          agent: { type: 'string', enum: ['proxy', 'scanner'], description: "A mail provider's image proxy (usually a person behind it) or a machine." },
          bot_reason: { type: 'string' },
          tls: {
            type: 'object',
            description:
              "sent, deferred, bounced: the TLS of the delivery attempt. `used`: over STARTTLS; `version`: TLSv1.3, TLSv1.2...; `verified`: the MX's certificate verified for its host name; `policy`: what required verified TLS (`domain`: the sender domain's `tls: \"enforced\"`, `provider`: the receiving provider, `mta-sts`: the recipient domain's MTA-STS policy in enforce mode), empty for opportunistic TLS; `note`: e.g. what an MTA-STS policy in testing mode would have refused.",
            properties: {
              used: { type: 'boolean' },
              version: { type: 'string' },
              verified: { type: 'boolean' },
              policy: { type: 'string', enum: ['', 'domain', 'provider', 'mta-sts'] },
              note: { type: 'string' },
            },
          },
        },
      },
    },
    tracking: {
      type: 'object',
      description: 'Opens and clicks (open and click tracking): counts, of them by machines (`bots`), first and last time, and per link.',
      properties: {
        opens: trackingCount,
        clicks: { type: 'object', properties: { ...trackingCount.properties, links: { type: 'array', items: trackingCount } } },
      },
    },
  },
} as const;
