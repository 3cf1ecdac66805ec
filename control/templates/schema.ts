// JSON schemas of the templates API (Resend's shapes) and of a send's `template`. What the
// schemas cannot say (variables used but undeclared, fallbacks of the wrong type) is checked
// by render.ts's checkDeclarations.
import type { Limits } from '../../core/config.js';
import { MAX_KEY_LENGTH, MAX_VARIABLES } from './render.js';

const noLineBreaks = '^[^\\r\\n]*$';
const addressString = { type: 'string', minLength: 3, maxLength: 320, pattern: noLineBreaks } as const;

/** An alias: letters, digits, `.`, `_` and `-`, starting with a letter or digit; never shaped like an id (a UUID). */
export const ALIAS_PATTERN = '^(?![0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$)[A-Za-z0-9][A-Za-z0-9._-]{0,127}$';
/** What names a template in a path or a send: its id or its alias. */
export const templateIdOrAlias = { type: 'string', minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' } as const;

/** A send's `template`: the id or alias of a published template, and its variables' values. */
export function templateRefSchema(limits: Pick<Limits, 'maxBodyBytes'>) {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['id'],
    description:
      'Send with a published template: `id` is its id or alias; `variables` give the values of its declared variables (a string or a number, as declared). The template gives html and text, and from, subject and reply_to where the request has none.',
    properties: {
      id: templateIdOrAlias,
      variables: {
        type: 'object',
        maxProperties: MAX_VARIABLES,
        propertyNames: { maxLength: MAX_KEY_LENGTH },
        additionalProperties: { anyOf: [{ type: 'string', maxLength: limits.maxBodyBytes }, { type: 'number' }] },
      },
    },
  } as const;
}

const variableSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['key', 'type'],
  properties: {
    key: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_KEY_LENGTH,
      description: 'Used in the texts as `{{{KEY}}}` (as it is) or `{{KEY}}` (HTML-escaped in html).',
    },
    type: { type: 'string', enum: ['string', 'number'] },
    fallback_value: {
      anyOf: [{ type: 'string', maxLength: 2000 }, { type: 'number' }, { type: 'null' }],
      description: 'Used when a send gives no value; without one, every send must give it.',
    },
  },
} as const;

/** POST /v1/templates and PATCH /v1/templates/:id (`create`: name and html required). */
export function templateBodySchema(limits: Pick<Limits, 'maxBodyBytes' | 'maxSubjectLength'>, create: boolean) {
  return {
    type: 'object',
    additionalProperties: false,
    ...(create ? { required: ['name', 'html'] } : {}),
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 256, pattern: noLineBreaks },
      alias: {
        ...(create ? { type: 'string' } : { type: ['string', 'null'] }),
        pattern: ALIAS_PATTERN,
        description: 'Unique in the project; names the template wherever its id does. 1 to 128 letters, digits, `.`, `_`, `-`.',
      },
      from: { ...addressString, type: ['string', 'null'] },
      subject: { type: ['string', 'null'], maxLength: limits.maxSubjectLength, pattern: noLineBreaks },
      reply_to: { anyOf: [addressString, { type: 'array', items: addressString, maxItems: 50 }, { type: 'null' }] },
      html: { type: 'string', minLength: 1, maxLength: limits.maxBodyBytes },
      text: { type: ['string', 'null'], maxLength: limits.maxBodyBytes },
      variables: { type: 'array', maxItems: MAX_VARIABLES, items: variableSchema },
    },
  } as const;
}

const nullableString = { type: ['string', 'null'] } as const;

const listItem = {
  id: { type: 'string' },
  name: { type: 'string' },
  alias: nullableString,
  status: { type: 'string', enum: ['draft', 'published'] },
  published_at: nullableString,
  created_at: { type: 'string' },
  updated_at: { type: 'string' },
} as const;

export const templateSchema = {
  type: 'object',
  properties: {
    object: { type: 'string', enum: ['template'] },
    ...listItem,
    from: nullableString,
    subject: nullableString,
    reply_to: { type: ['array', 'null'], items: { type: 'string' } },
    html: { type: 'string' },
    text: nullableString,
    variables: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          key: { type: 'string' },
          type: { type: 'string' },
          fallback_value: { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'null' }] },
          created_at: { type: 'string' },
          updated_at: { type: 'string' },
        },
      },
    },
    has_unpublished_versions: { type: 'boolean', description: 'The draft differs from the published version (sends use the published one).' },
    current_version_id: { type: 'string' },
  },
} as const;

export const templateListSchema = {
  type: 'object',
  required: ['object', 'has_more', 'data'],
  properties: {
    object: { type: 'string', enum: ['list'] },
    has_more: { type: 'boolean' },
    data: { type: 'array', items: { type: 'object', properties: listItem } },
  },
} as const;

/** What create, update, duplicate and publish answer (Resend's). */
export const templateRefAnswer = {
  type: 'object',
  properties: { object: { type: 'string', enum: ['template'] }, id: { type: 'string' } },
} as const;

export const templateDeletedAnswer = {
  type: 'object',
  properties: { object: { type: 'string', enum: ['template'] }, id: { type: 'string' }, deleted: { type: 'boolean' } },
} as const;
