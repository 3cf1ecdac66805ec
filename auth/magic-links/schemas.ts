// JSON schemas of the magic-link routes (validation and /openapi.json).
import { errorSchema } from '../../control/http/schemas.js';
import { codeChallenge } from '../schemas.js';

const s = { type: 'string' } as const;
const email = { ...s, minLength: 3, maxLength: 254 } as const;
const html = { type: 'string', description: 'An HTML page' } as const;
const { $id: _id, ...errorFields } = errorSchema;
/**
 * A refusal of a page route: an HTML page (sent as a string, which the serializer passes through), or for a
 * request its schema refuses the JSON {error, code}; a string schema here would mangle that JSON answer.
 */
const refusal = (description: string) => ({ ...errorFields, description: `${description} (an HTML page; a malformed request: the JSON error)` });
const sent = {
  type: 'object',
  required: ['success', 'message'],
  properties: { success: { type: 'boolean' }, message: s },
} as const;

export const schemas = {
  send: {
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['email', 'callbackURL'],
      properties: {
        email,
        callbackURL: {
          ...s,
          maxLength: 2048,
          description:
            'Where the link returns with svc_code; its origin must be allowed for the project (and the URL registered, if the project registered any)',
        },
        codeChallenge,
      },
    },
    response: { 200: sent },
  },
  hostedSend: {
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['slug', 'email', 'redirectUri'],
      properties: {
        slug: { ...s, minLength: 1, maxLength: 64, description: 'The project slug' },
        email,
        redirectUri: { ...s, minLength: 1, maxLength: 2048, description: "The app's callback address; its origin must be allowed for the project" },
        codeChallenge,
      },
    },
    response: {
      200: {
        type: 'object',
        required: ['success', 'message', 'resendAfterSeconds'],
        properties: { ...sent.properties, resendAfterSeconds: { type: 'integer', description: 'A new link for the same address no sooner than this' } },
      },
    },
  },
  testLink: {
    querystring: { type: 'object', additionalProperties: false, required: ['email'], properties: { email: { ...s, maxLength: 254 } } },
    response: {
      200: {
        type: 'object',
        required: ['url', 'expiresAt'],
        properties: { url: { ...s, description: 'The link as it would have been emailed' }, expiresAt: { ...s, format: 'date-time' } },
      },
    },
  },
  link: {
    params: { type: 'object', required: ['token'], properties: { token: { ...s, maxLength: 128 } } },
    page: {
      200: { ...html, description: 'The confirm page: a button that POSTs to this address' },
      400: refusal('Not a link token'),
      404: refusal('Unknown link'),
      410: refusal('Used or expired link'),
    },
    confirm: {
      303: { description: "Redirect to the app's callback with svc_code (exchange it with the verifier of the browser that asked)", type: 'null' },
      400: refusal('Not a link token'),
      403: refusal('The project turned magic links off'),
      404: refusal('Unknown link'),
      410: refusal('Used or expired link'),
    },
  },
};
