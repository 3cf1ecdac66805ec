// JSON schemas and answers of user management (auth/users): they validate requests and describe the API in
// the OpenAPI document. Fields are camelCase, as the auth API's User resource.
import type { IdentityRow, ManagedUser, SessionRow } from '../../control/store/index.js';
import { passkeyView } from '../passkeys/schemas.js';
import { banned } from './gate.js';
import { METADATA_MAX_BYTES } from './service.js';

const s = { type: 'string' } as const;
const sn = { type: ['string', 'null'] } as const;
const time = { type: 'string', format: 'date-time' } as const;
const uuid = { type: 'string', format: 'uuid' } as const;
const iso = (ms: number) => new Date(ms).toISOString();

export const banSchema = {
  type: ['object', 'null'],
  description: 'The ban in force, if any',
  required: ['reason', 'bannedAt', 'expiresAt'],
  properties: { reason: s, bannedAt: time, expiresAt: { ...sn, format: 'date-time', description: 'null: until lifted' } },
} as const;

export const managedUserSchema = {
  type: 'object',
  required: [
    'id',
    'email',
    'emailVerified',
    'phone',
    'phoneVerified',
    'name',
    'avatarUrl',
    'username',
    'provider',
    'createdAt',
    'lastSignIn',
    'metadata',
    'banned',
    'ban',
  ],
  properties: {
    id: uuid,
    email: sn,
    emailVerified: { type: 'boolean' },
    phone: sn,
    phoneVerified: { type: 'boolean' },
    name: sn,
    avatarUrl: sn,
    username: sn,
    provider: { ...s, description: 'The provider of its first sign-in' },
    createdAt: time,
    lastSignIn: { ...sn, format: 'date-time' },
    metadata: { type: 'object', additionalProperties: true, description: `The app's own data (JSON, at most ${METADATA_MAX_BYTES} bytes)` },
    banned: { type: 'boolean' },
    ban: banSchema,
  },
} as const;

export const identitySchema = {
  type: 'object',
  required: ['provider', 'subject', 'createdAt'],
  properties: { provider: s, subject: { ...s, description: "The user's id at the provider (the address or number for email and SMS codes)" }, createdAt: time },
} as const;

export const userSessionSchema = {
  type: 'object',
  required: ['id', 'provider', 'ip', 'userAgent', 'createdAt', 'expiresAt'],
  properties: { id: uuid, provider: s, ip: sn, userAgent: sn, createdAt: time, expiresAt: time },
} as const;

export function managedOut(m: ManagedUser): Record<string, unknown> {
  const u = m.user;
  const ban = banned(m.ban) ? m.ban : null;
  return {
    id: u.id,
    email: u.email,
    emailVerified: u.emailVerified,
    phone: u.phone,
    phoneVerified: m.phoneVerified,
    name: u.name,
    avatarUrl: u.avatarUrl,
    username: u.username,
    provider: u.provider,
    createdAt: iso(u.createdAt),
    lastSignIn: u.lastSignIn === null ? null : iso(u.lastSignIn),
    metadata: m.metadata,
    banned: ban !== null,
    ban: ban && { reason: ban.reason, bannedAt: iso(ban.bannedAt), expiresAt: ban.expiresAt === null ? null : iso(ban.expiresAt) },
  };
}

export const identityOut = (i: IdentityRow) => ({ provider: i.provider, subject: i.subject, createdAt: iso(i.createdAt) });
export const userSessionOut = (x: SessionRow) => ({
  id: x.id,
  provider: x.provider,
  ip: x.ip,
  userAgent: x.userAgent,
  createdAt: iso(x.createdAt),
  expiresAt: iso(x.expiresAt),
});

// Query strings are not coerced (control/http/fastify.ts): a number arrives as digits.
export const listQuery = {
  email: { type: 'string', minLength: 1, maxLength: 320, description: 'The whole address, case-insensitive' },
  email_prefix: { type: 'string', minLength: 1, maxLength: 320, description: 'Addresses starting with it, case-insensitive (% and _ are literal)' },
  phone: { type: 'string', minLength: 1, maxLength: 32, description: 'E.164' },
  provider: { type: 'string', minLength: 1, maxLength: 32, description: 'Users with an identity of this provider' },
  subject: { type: 'string', minLength: 1, maxLength: 512, description: "With provider: the user's id there" },
  created_after: { ...time, description: 'Created at or after' },
  created_before: { ...time, description: 'Created before' },
  last_sign_in_after: { ...time, description: 'Last signed in at or after' },
  last_sign_in_before: { ...time, description: 'Last signed in before' },
  limit: { type: 'string', pattern: '^(100|[1-9][0-9]?)$', description: '1 to 100; 20 when omitted.' },
  after: { ...uuid, description: 'The last user id of the previous page (its nextCursor): the page continues after it' },
} as const;

export const listAnswer = {
  type: 'object',
  required: ['data', 'hasMore', 'nextCursor'],
  properties: {
    data: { type: 'array', items: managedUserSchema },
    hasMore: { type: 'boolean' },
    nextCursor: { ...sn, description: 'Pass as after for the next page; null on the last one' },
  },
} as const;

export const twoFactorSchema = {
  type: 'object',
  required: ['totp', 'confirmedAt', 'backupCodesLeft'],
  description: 'Second factors (two-factor)',
  properties: {
    totp: { type: 'boolean', description: 'A confirmed authenticator app' },
    confirmedAt: { ...sn, format: 'date-time' },
    backupCodesLeft: { type: 'integer' },
  },
} as const;

export const detailAnswer = {
  type: 'object',
  required: [...managedUserSchema.required, 'identities', 'sessions', 'passkeys', 'twoFactor'],
  properties: {
    ...managedUserSchema.properties,
    identities: { type: 'array', items: identitySchema },
    sessions: { type: 'array', items: userSessionSchema, description: 'Live sessions, newest first' },
    passkeys: { type: 'array', items: passkeyView },
    twoFactor: twoFactorSchema,
  },
} as const;

export const updateBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    emailVerified: { type: 'boolean' },
    phoneVerified: { type: 'boolean' },
    name: { type: ['string', 'null'], maxLength: 256 },
    metadata: { type: 'object', description: `Replaces the whole metadata object (JSON, at most ${METADATA_MAX_BYTES} bytes)` },
  },
} as const;

export const banBody = {
  type: 'object',
  additionalProperties: false,
  required: ['reason'],
  properties: {
    reason: { type: 'string', minLength: 1, maxLength: 500 },
    until: { ...time, description: 'The end of the ban; without it, until lifted' },
  },
} as const;

export const sessionsAnswer = {
  type: 'object',
  required: ['data'],
  properties: { data: { type: 'array', items: userSessionSchema } },
} as const;
