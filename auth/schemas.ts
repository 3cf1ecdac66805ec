// JSON schemas of the auth API: they validate requests and describe the API in
// the OpenAPI document (tags ['auth']).
import { errorSchema } from '../control/http/schemas.js';
import type { SessionRow, UserRow } from '../control/store/index.js';
import { ApiError } from '../core/errors.js';
import { isPending, type OpenedSession, type PendingSignIn } from './sessions.js';

const s = { type: 'string' } as const;
const sn = { type: ['string', 'null'] } as const;

export const userSchema = {
  type: 'object',
  required: ['id', 'email', 'emailVerified', 'name', 'avatarUrl', 'phone', 'username', 'provider', 'createdAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    email: sn,
    emailVerified: { type: 'boolean' },
    name: sn,
    avatarUrl: sn,
    phone: sn,
    username: sn,
    provider: { ...s, description: 'Provider id through which the user signed in' },
    createdAt: { ...s, format: 'date-time' },
    lastSignIn: { ...s, format: 'date-time' },
  },
} as const;

const pick = <K extends keyof typeof userSchema.properties>(...keys: K[]) => ({
  type: 'object',
  required: keys,
  properties: Object.fromEntries(keys.map((k) => [k, userSchema.properties[k]])),
});

const iso = (ms: number) => new Date(ms).toISOString();

/** The User resource; each response schema keeps only the fields the API documents for it. */
export function userOut(u: UserRow, provider = u.provider): Record<string, unknown> {
  return {
    id: u.id,
    email: u.email,
    emailVerified: u.emailVerified,
    name: u.name,
    avatarUrl: u.avatarUrl,
    phone: u.phone,
    username: u.username,
    provider,
    createdAt: iso(u.createdAt),
    ...(u.lastSignIn ? { lastSignIn: iso(u.lastSignIn) } : {}),
  };
}
export const sessionOut = (sess: SessionRow) => ({ id: sess.id, expiresAt: iso(sess.expiresAt) });
/** The user as GET /session gives it (the fields of its response schema, in order). */
export const sessionUserOut = (u: UserRow, provider: string) => ({
  id: u.id,
  email: u.email,
  emailVerified: u.emailVerified,
  name: u.name,
  avatarUrl: u.avatarUrl,
  provider,
  createdAt: iso(u.createdAt),
});

/**
 * A sign-in held for its second factor (auth/two-factor): no session yet, an error answer (401
 * TWO_FACTOR_REQUIRED, so a client that knows nothing of second factors stops with a clear code) that carries
 * the ticket the factor turns into a session at POST /api/v1/auth/two-factor/verify. Only for users with a
 * second factor, or projects that require one.
 */
export const pendingErrorSchema = {
  type: 'object',
  required: ['error', 'code'],
  properties: {
    ...errorSchema.properties,
    pendingToken: { ...s, description: 'TWO_FACTOR_REQUIRED: single use; send it to /two-factor/verify (or /two-factor/enrol when enrol is true)' },
    methods: { type: 'array', items: { ...s, enum: ['totp', 'backup_code'] }, description: 'TWO_FACTOR_REQUIRED: the factors that can finish it' },
    enrol: { type: 'boolean', description: 'TWO_FACTOR_REQUIRED: the project requires a second factor and this user has none yet: enrol first' },
    expiresAt: { ...s, format: 'date-time' },
  },
} as const;

/** The refusal that holds a sign-in for its second factor, with its ticket. */
export const pendingError = (p: PendingSignIn): ApiError =>
  new ApiError('TWO_FACTOR_REQUIRED', 'This sign-in needs a second factor', {
    pendingToken: p.ticket,
    methods: p.methods,
    enrol: p.enrol,
    expiresAt: iso(p.expiresAt),
  });

/** A sign-in's answer: its session token and user, or (thrown) the pending state of a second factor. */
export function answerSignIn(s: OpenedSession | PendingSignIn, provider?: string): Record<string, unknown> {
  if (isPending(s)) throw pendingError(s);
  return { token: s.token, user: userOut(s.user, provider ?? s.user.provider) };
}

const signedIn = (user: object) => ({
  type: 'object',
  required: ['token', 'user'],
  properties: { token: { ...s, description: 'Session token (send as Authorization: Bearer)' }, user },
});

export const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema, 429: errorSchema } as const;
export const serviceKey = [{ serviceKey: [] }];
export const serviceKeyAndSession = [{ serviceKey: [], sessionToken: [] }];
export const clientIpHeader = {
  type: 'object',
  properties: {
    'x-service-client-ip': {
      ...s,
      description: "The end user's IP when a server calls on their behalf (honoured for scope-all keys); the regional filter applies to it",
    },
  },
} as const;

export const providerSchema = {
  type: 'object',
  required: ['id', 'name', 'methods'],
  properties: { id: s, name: s, methods: { type: 'array', items: s } },
} as const;

/** Login CSRF binding (auth/browser-binding.ts): S256 of a verifier the starting browser keeps. */
export const codeChallenge = {
  type: 'string',
  pattern: '^[A-Za-z0-9_-]{43}$',
  description:
    'base64url(SHA-256(codeVerifier)). Binds the sign-in to the browser that started it: exchange-code must then send codeVerifier. Required unless the project turned the binding off (a new project requires it). The SDK and the embed script do it for you',
} as const;
export const codeVerifier = {
  type: 'string',
  pattern: '^[A-Za-z0-9._~-]{43,128}$',
  description: 'The verifier (RFC 7636 characters, 43-128) whose hash was sent as codeChallenge when the sign-in started',
} as const;

export const schemas = {
  providers: { response: { 200: { type: 'object', required: ['providers'], properties: { providers: { type: 'array', items: providerSchema } } } } },
  social: {
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['provider', 'callbackURL'],
      properties: {
        provider: { ...s, maxLength: 32 },
        method: { type: 'string', enum: ['oauth'], description: 'Default oauth' },
        callbackURL: {
          ...s,
          maxLength: 2048,
          description: "The app's return address; its origin must be allowed for the project (and the URL registered, if the project registered any)",
        },
        codeChallenge,
      },
    },
    response: { 200: { type: 'object', required: ['url'], properties: { url: { ...s, description: 'Where to send the user (the provider)' } } } },
  },
  callback: {
    params: { type: 'object', required: ['provider'], properties: { provider: { ...s, maxLength: 32 } } },
    querystring: {
      type: 'object',
      additionalProperties: { type: 'string' },
      properties: { code: s, state: s, error: s, error_description: s, device_id: { ...s, description: 'VK ID' }, iss: s },
    },
    response: { 302: { description: "Redirect to the app's callbackURL with svc_code, or with error", type: 'null' } },
  },
  exchange: {
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['code'],
      properties: { code: { ...s, minLength: 1, maxLength: 200, description: 'The svc_code' }, codeVerifier },
    },
    response: { 200: signedIn(userSchema), 401: pendingErrorSchema },
  },
  verifyToken: {
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['provider', 'method', 'credential'],
      properties: {
        provider: { ...s, maxLength: 32 },
        method: { type: 'string', enum: ['id_token', 'silent_token', 'instant_token', 'oidc', 'miniapp'] },
        credential: {
          ...s,
          minLength: 1,
          maxLength: 16384,
          description: 'id_token, VK silent payload {token, uuid} as JSON, Yandex token or Telegram initData',
        },
        nonce: { ...s, maxLength: 512, description: 'The nonce the app put in the id_token request, checked when given' },
      },
    },
    response: { 200: signedIn(pick('id', 'email', 'name', 'avatarUrl')), 401: pendingErrorSchema },
  },
  telegramWidget: {
    body: {
      type: 'object',
      required: ['id', 'auth_date', 'hash'],
      // Every field the widget sends is signed (last_name, photo_url…): all are kept for the check.
      additionalProperties: { anyOf: [{ type: 'string', maxLength: 2048 }, { type: 'number' }, { type: 'boolean' }] },
      maxProperties: 32,
      properties: {
        id: { type: 'integer' },
        first_name: s,
        last_name: s,
        username: s,
        photo_url: s,
        auth_date: { type: 'integer', description: 'Unix seconds' },
        hash: { ...s, maxLength: 128 },
      },
    },
    response: { 200: signedIn(pick('id', 'name', 'phone')), 401: pendingErrorSchema },
  },
  emailSend: {
    body: { type: 'object', additionalProperties: false, required: ['email'], properties: { email: { ...s, minLength: 3, maxLength: 254 } } },
    response: { 200: { type: 'object', required: ['success', 'message'], properties: { success: { type: 'boolean' }, message: s } } },
  },
  emailVerify: {
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['email', 'code'],
      properties: { email: { ...s, minLength: 3, maxLength: 254 }, code: { ...s, maxLength: 16, description: '6 digits' } },
    },
    response: { 200: signedIn(pick('id', 'email')), 401: pendingErrorSchema },
  },
  smsSend: {
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['phone'],
      properties: { phone: { ...s, maxLength: 16, description: 'E.164, e.g. +79991234567' } },
    },
    response: { 200: { type: 'object', required: ['success', 'message'], properties: { success: { type: 'boolean' }, message: s } } },
  },
  smsVerify: {
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['phone', 'code'],
      properties: { phone: { ...s, maxLength: 16 }, code: { ...s, maxLength: 16 } },
    },
    response: { 200: signedIn(pick('id', 'phone')), 401: pendingErrorSchema },
  },
  session: {
    response: {
      200: {
        type: 'object',
        required: ['user', 'session'],
        properties: {
          user: pick('id', 'email', 'emailVerified', 'name', 'avatarUrl', 'provider', 'createdAt'),
          session: { type: 'object', required: ['id', 'expiresAt'], properties: { id: s, expiresAt: { ...s, format: 'date-time' } } },
        },
      },
    },
  },
  signOut: { response: { 200: { type: 'object', required: ['success'], properties: { success: { type: 'boolean' } } } } },
  testCode: {
    querystring: {
      type: 'object',
      additionalProperties: false,
      minProperties: 1,
      maxProperties: 1,
      properties: { email: { ...s, maxLength: 254 }, phone: { ...s, maxLength: 16 } },
    },
    response: { 200: { type: 'object', required: ['code', 'expiresAt'], properties: { code: s, expiresAt: { ...s, format: 'date-time' } } } },
  },
};
