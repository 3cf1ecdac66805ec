// JSON schemas of the hosted (public, keyless) endpoints: they validate
// requests and describe the endpoints in /openapi.json (tags ['auth']).
import { errorSchema } from '../../control/http/schemas.js';
import { codeChallenge } from '../schemas.js';

const s = { type: 'string' } as const;
/** A page or a file: text of its own media type, not JSON. */
const text = { type: 'string' } as const;
const slug = { ...s, minLength: 1, maxLength: 64, description: 'The project slug' } as const;
const redirectUri = { ...s, minLength: 1, maxLength: 2048, description: "The app's callback address; its origin must be allowed for the project" } as const;
const email = { ...s, minLength: 3, maxLength: 254 } as const;

export const errors = { 400: errorSchema, 403: errorSchema, 404: errorSchema, 429: errorSchema } as const;
export const tags = ['auth'];

export const hostedProvider = {
  type: 'object',
  required: ['id', 'name', 'methods'],
  properties: {
    id: s,
    name: s,
    nameRu: { ...s, description: 'The Russian display name, where it differs' },
    methods: {
      type: 'array',
      items: { type: 'string', enum: ['oauth', 'otp', 'magic_link'] },
      description: 'What the widget may offer: oauth (a redirect button), otp (the email code form) or magic_link (an emailed sign-in link)',
    },
  },
} as const;

export const schemas = {
  config: {
    params: { type: 'object', required: ['slug'], properties: { slug } },
    response: {
      200: {
        type: 'object',
        required: ['slug', 'name', 'logoUrl', 'providers', 'codeLength', 'codeTtlSeconds', 'resendAfterSeconds'],
        properties: {
          slug: s,
          name: { ...s, description: "The project's display name" },
          logoUrl: { type: ['string', 'null'], description: "The project's logo; null draws its initial" },
          providers: { type: 'array', items: hostedProvider, description: "Enabled for the project and for the caller's region" },
          codeLength: { type: 'integer' },
          codeTtlSeconds: { type: 'integer' },
          resendAfterSeconds: { type: 'integer', description: 'A new email code for the same address no sooner than this' },
        },
      },
    },
  },
  start: {
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['slug', 'provider', 'redirectUri'],
      properties: {
        slug,
        provider: { ...s, maxLength: 32 },
        method: { type: 'string', enum: ['oauth'], description: 'Default oauth' },
        redirectUri,
        codeChallenge,
      },
    },
    response: { 200: { type: 'object', required: ['url'], properties: { url: { ...s, description: 'The provider address to send the top window to' } } } },
  },
  send: {
    body: { type: 'object', additionalProperties: false, required: ['slug', 'email', 'redirectUri'], properties: { slug, email, redirectUri } },
    response: {
      200: {
        type: 'object',
        required: ['success', 'message', 'resendAfterSeconds'],
        properties: { success: { type: 'boolean' }, message: s, resendAfterSeconds: { type: 'integer' } },
      },
    },
  },
  verify: {
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['slug', 'email', 'code', 'redirectUri'],
      properties: { slug, email, code: { ...s, maxLength: 16, description: '6 digits' }, redirectUri, codeChallenge },
    },
    response: {
      200: {
        type: 'object',
        required: ['redirectUrl'],
        properties: { redirectUrl: { ...s, description: 'redirectUri with a single-use svc_code: send the top window there; the app exchanges the code' } },
      },
    },
  },
  widget: {
    querystring: {
      type: 'object',
      required: ['slug', 'redirect_uri'],
      properties: {
        slug,
        redirect_uri: redirectUri,
        origin: { ...s, maxLength: 300, description: "The embedding page's origin (set by the embed script); messages go to it only" },
        lang: { type: 'string', enum: ['en', 'ru'], description: 'Default: from Accept-Language' },
        code_challenge: { ...codeChallenge, description: 'Set by the embed script: the widget binds its sign-ins to the embedding browser with it' },
      },
    },
    // A refusal (unknown project, callback or origin not allowed) is an HTML page too, with status 404 or 400; a malformed query is {error, code}.
    // Each answer is documented with the media type it really has, so a generated client never parses the page as JSON.
    response: {
      200: { description: "The sign-in form, frameable by the project's allowed origins only", content: { 'text/html': { schema: text } } },
      400: {
        description: 'A malformed query ({error, code}), or the refusal page when the callback URL or the origin is not allowed for the project',
        content: { 'application/json': { schema: errorSchema }, 'text/html': { schema: text } },
      },
      404: { description: 'No project has this slug: the refusal page', content: { 'text/html': { schema: text } } },
    },
  },
  script: { response: { 200: { description: 'A script of the widget', content: { 'text/javascript': { schema: text } } } } },
  stylesheet: { response: { 200: { description: "The widget's stylesheet", content: { 'text/css': { schema: text } } } } },
};
