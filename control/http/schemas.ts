// Route schemas shared by every area: the one error shape ({error, code}, and the email id where one was recorded).
export const errorSchema = {
  $id: 'Error',
  type: 'object',
  required: ['error', 'code'],
  properties: {
    error: { type: 'string' },
    code: { type: 'string' },
    id: { type: 'string' },
    // Resend's names for the same answer (its SDK reads these).
    name: { type: 'string' },
    message: { type: 'string' },
    statusCode: { type: 'integer' },
  },
} as const;

/**
 * The querystring of a list that answers every item without `limit` and pages as Resend's lists do
 * (`after`/`before` an id). Query strings are not coerced (control/http/fastify.ts): a number arrives as digits.
 */
export function allOrPageQuerySchema(item: string, items: string) {
  return {
    type: 'object',
    additionalProperties: false,
    properties: {
      limit: { type: 'string', pattern: '^(100|[1-9][0-9]?)$', description: `1 to 100; every ${item} when omitted` },
      after: { type: 'string', maxLength: 100, description: `A ${item} id: the ${items} after it` },
      before: { type: 'string', maxLength: 100, description: `A ${item} id: the ${items} before it` },
    },
  } as const;
}
