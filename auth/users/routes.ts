import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import { notFound } from '../../core/errors.js';
import type { KeyRequirement } from '../../control/api-keys/authenticate.js';
import { errorSchema } from '../../control/http/schemas.js';
import type { Env, UserChanges, UserQuery } from '../../control/store/index.js';
import type { AuthServices } from '../services.js';
import { scopeOf } from '../sessions.js';
import type { EventScope } from '../events.js';
import { errors, serviceKey } from '../schemas.js';
import type { UserManagement } from './service.js';
import {
  banBody,
  detailAnswer,
  identityOut,
  listAnswer,
  listQuery,
  managedOut,
  managedUserSchema,
  sessionsAnswer,
  updateBody,
  userSessionOut,
} from './schemas.js';

/** Server keys only: an auth-scope key is browser-safe and never manages users. */
export const USER_KEYS: KeyRequirement = { kinds: ['live', 'test'], scopes: ['all', 'users'] };

const uuid = { type: 'string', format: 'uuid' } as const;
const ms = (iso: string | undefined) => (iso === undefined ? undefined : Date.parse(iso));

interface ListQuery {
  email?: string;
  email_prefix?: string;
  phone?: string;
  provider?: string;
  subject?: string;
  created_after?: string;
  created_before?: string;
  last_sign_in_after?: string;
  last_sign_in_before?: string;
  limit?: string;
  after?: string;
}

interface Surface {
  base: string;
  /** The project and environment a request acts on. */
  scope(req: FastifyRequest): Promise<EventScope>;
  /** OpenAPI fields of every route (tags and security, or hidden). */
  doc: Record<string, unknown>;
  /** Path parameters before :id (the admin's :slug). */
  params: Record<string, unknown>;
  /** Query parameters of every route (the admin's env). */
  query: Record<string, unknown>;
  errors: Record<number, unknown>;
  /**
   * Notes a change in the operator audit log (the admin surface; the auth audit log has it either way). Ids,
   * never the user's address: the operator log outlives a deletion.
   */
  record(req: FastifyRequest, scope: EventScope, action: string, details?: Record<string, unknown>): Promise<void>;
  /** The OpenAPI operationId of a route (none on hidden routes). */
  op(id: string): Record<string, string>;
  /** What other features keep about the user (second factors, passkeys), for GET /users/:id. */
  extras(scope: EventScope, userId: string): Promise<Record<string, unknown>>;
}

type Req = FastifyRequest<{ Params: { id: string; sessionId?: string }; Querystring: Record<string, string | undefined> }>;

function register(app: FastifyInstance, users: UserManagement, s: Surface): void {
  const params = (...names: Array<'id' | 'sessionId'>) => ({
    type: 'object',
    required: [...Object.keys(s.params), ...names],
    properties: { ...s.params, ...Object.fromEntries(names.map((n) => [n, uuid])) },
  });
  const query = (more: Record<string, unknown> = {}) => ({ type: 'object', additionalProperties: false, properties: { ...s.query, ...more } });
  const one = { 200: managedUserSchema, ...s.errors };
  const scope = (req: FastifyRequest) => s.scope(req);
  const id = (req: FastifyRequest) => (req as Req).params.id;

  app.get(
    s.base,
    {
      schema: {
        ...s.doc,
        ...s.op('listUsers'),
        summary: "List and search the environment's users, newest first (keyset pages of at most 100)",
        querystring: query(listQuery),
        response: { 200: listAnswer, ...s.errors },
      },
    },
    async (req) => {
      const q = req.query as ListQuery;
      const limit = q.limit ? Number(q.limit) : 20;
      const filters: UserQuery = { limit };
      const put = <K extends keyof UserQuery>(k: K, v: UserQuery[K] | undefined) => {
        if (v !== undefined) filters[k] = v;
      };
      put('after', q.after);
      put('email', q.email);
      put('emailPrefix', q.email_prefix);
      put('phone', q.phone);
      put('provider', q.provider);
      put('subject', q.subject);
      put('createdAfter', ms(q.created_after));
      put('createdBefore', ms(q.created_before));
      put('lastSignInAfter', ms(q.last_sign_in_after));
      put('lastSignInBefore', ms(q.last_sign_in_before));
      const page = await users.list(await scope(req), filters);
      const data = page.users.map(managedOut);
      return { data, hasMore: page.hasMore, nextCursor: page.hasMore ? page.users[page.users.length - 1]!.user.id : null };
    },
  );

  app.get(
    `${s.base}/:id`,
    {
      schema: {
        ...s.doc,
        ...s.op('getUser'),
        summary: 'A user with its identities and live sessions',
        params: params('id'),
        querystring: query(),
        response: { 200: detailAnswer, ...s.errors },
      },
    },
    async (req) => {
      const where = await scope(req);
      const d = await users.detail(where, id(req));
      return {
        ...managedOut(d.managed),
        identities: d.identities.map(identityOut),
        sessions: d.sessions.map(userSessionOut),
        ...(await s.extras(where, d.managed.user.id)),
      };
    },
  );

  app.patch(
    `${s.base}/:id`,
    {
      schema: {
        ...s.doc,
        ...s.op('updateUser'),
        summary: "Update a user's verified flags, name or metadata",
        params: params('id'),
        querystring: query(),
        body: updateBody,
        response: one,
      },
    },
    async (req) => {
      const where = await scope(req);
      const m = await users.update(where, id(req), req.body as UserChanges);
      await s.record(req, where, 'user.update', { fields: Object.keys(req.body as object) });
      return managedOut(m);
    },
  );

  app.post(
    `${s.base}/:id/ban`,
    {
      schema: {
        ...s.doc,
        ...s.op('banUser'),
        summary: 'Ban a user (until a time, or until lifted): its live sessions end at once and every sign-in answers USER_BANNED',
        params: params('id'),
        querystring: query(),
        body: banBody,
        response: one,
      },
    },
    async (req) => {
      const b = req.body as { reason: string; until?: string };
      const where = await scope(req);
      const m = await users.ban(where, id(req), b.reason, b.until === undefined ? null : Date.parse(b.until));
      await s.record(req, where, 'user.ban', { reason: b.reason, until: b.until ?? null });
      return managedOut(m);
    },
  );

  app.post(
    `${s.base}/:id/unban`,
    { schema: { ...s.doc, ...s.op('unbanUser'), summary: "Lift a user's ban", params: params('id'), querystring: query(), response: one } },
    async (req) => {
      const where = await scope(req);
      const m = await users.unban(where, id(req));
      await s.record(req, where, 'user.unban');
      return managedOut(m);
    },
  );

  app.delete(
    `${s.base}/:id`,
    {
      schema: {
        ...s.doc,
        ...s.op('deleteUser'),
        summary: 'Delete a user: its sessions end, its personal data is removed; the audit log keeps a user.deleted entry without it',
        params: params('id'),
        querystring: query(),
        response: {
          200: { type: 'object', required: ['id', 'deleted'], properties: { id: uuid, deleted: { type: 'boolean', enum: [true] } } },
          ...s.errors,
        },
      },
    },
    async (req) => {
      const where = await scope(req);
      await users.delete(where, id(req));
      await s.record(req, where, 'user.delete');
      return { id: id(req), deleted: true };
    },
  );

  app.get(
    `${s.base}/:id/sessions`,
    {
      schema: {
        ...s.doc,
        ...s.op('listUserSessions'),
        summary: "A user's live sessions, newest first",
        params: params('id'),
        querystring: query(),
        response: { 200: sessionsAnswer, ...s.errors },
      },
    },
    async (req) => ({ data: (await users.sessions(await scope(req), id(req))).map(userSessionOut) }),
  );

  app.delete(
    `${s.base}/:id/sessions/:sessionId`,
    {
      schema: {
        ...s.doc,
        ...s.op('revokeUserSession'),
        summary: "End one of a user's sessions: its token is invalid at once",
        params: params('id', 'sessionId'),
        querystring: query(),
        response: {
          200: { type: 'object', required: ['id', 'revoked'], properties: { id: uuid, revoked: { type: 'boolean', enum: [true] } } },
          ...s.errors,
        },
      },
    },
    async (req) => {
      const sessionId = (req as Req).params.sessionId!;
      const where = await scope(req);
      await users.revokeSession(where, id(req), sessionId);
      await s.record(req, where, 'user.session.revoke', { session: sessionId });
      return { id: sessionId, revoked: true };
    },
  );

  app.delete(
    `${s.base}/:id/sessions`,
    {
      schema: {
        ...s.doc,
        ...s.op('revokeUserSessions'),
        summary: 'End every session of a user: their tokens are invalid at once',
        params: params('id'),
        querystring: query(),
        response: { 200: { type: 'object', required: ['revoked'], properties: { revoked: { type: 'integer', description: 'How many ended' } } }, ...s.errors },
      },
    },
    async (req) => {
      const where = await scope(req);
      const revoked = await users.revokeSessions(where, id(req));
      await s.record(req, where, 'user.sessions.revoke', { revoked });
      return { revoked };
    },
  );
}

/** The project backend's routes (a `users` or `all` key), in their own plugin: the key hook covers only them. */
export const userRoutes =
  (ctx: AuthServices, users: UserManagement): FastifyPluginAsync =>
  async (app) => {
    if (!app.hasRequestDecorator('caller')) app.decorateRequest('caller', undefined);
    app.addHook('onRequest', ctx.access.hook(USER_KEYS));
    register(app, users, {
      base: '/api/v1/auth/users',
      scope: async (req) => scopeOf(req.caller!),
      doc: { tags: ['users'], security: serviceKey },
      params: {},
      query: {},
      errors: { ...errors, 409: errorSchema },
      op: (operationId) => ({ operationId }),
      record: async () => {},
      extras: extrasOf(ctx),
    });
  };

/** A user's passkeys (auth/passkeys) and second factors (auth/two-factor), as GET /users/:id shows them. */
const extrasOf =
  (ctx: AuthServices) =>
  async (scope: EventScope, userId: string): Promise<Record<string, unknown>> => {
    const [passkeys, f] = await Promise.all([ctx.passkeys.listForUser(scope, userId), ctx.twoFactor.statusForUser(scope, userId)]);
    return {
      passkeys,
      twoFactor: { totp: f.totp, confirmedAt: f.confirmedAt === null ? null : new Date(f.confirmedAt).toISOString(), backupCodesLeft: f.backupCodesLeft },
    };
  };

const slug = { type: 'string', pattern: '^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$' } as const;

/** The operator's routes (admin listener), hidden from the public OpenAPI document as auth/admin.ts's. */
export const adminUserRoutes =
  (ctx: AuthServices, users: UserManagement): FastifyPluginAsync =>
  async (app) => {
    register(app, users, {
      base: '/admin/v1/projects/:slug/auth/users',
      scope: async (req) => {
        const r = req as FastifyRequest<{ Params: { slug: string }; Querystring: { env?: Env } }>;
        const p = await ctx.projectsStore.projects.bySlug(r.params.slug);
        if (!p) throw notFound(`No project ${r.params.slug}`);
        return { projectId: p.id, env: r.query.env ?? 'live' };
      },
      doc: { hide: true, tags: ['admin'] },
      params: { slug },
      query: { env: { type: 'string', enum: ['live', 'test'], description: 'The environment (live when omitted)' } },
      errors: { 400: errorSchema, 401: errorSchema, 404: errorSchema, 409: errorSchema },
      op: () => ({}),
      record: (req, scope, action, details = {}) =>
        ctx.operatorAudit(req, {
          action,
          target: `project:${(req.params as { slug: string }).slug} user:${(req.params as { id: string }).id}`,
          details: { env: scope.env, ...details },
        }),
      extras: extrasOf(ctx),
    });
  };
