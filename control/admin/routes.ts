// The admin API behind the CLI: every operator change goes through here, so it
// is validated once and takes effect at once (caches are invalidated).
import crypto from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { ApiError, invalid, notFound } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import type { Invalidator } from '../../core/invalidation.js';
import { newApiKey } from '../api-keys/issue.js';
import { AUTH_EVENT_TYPES, type AuditEntry, type AuthEventType, type KeyKind, type KeyScope, type Project, type Store } from '../store/index.js';
import { errorSchema } from '../http/schemas.js';
import { sealer } from '../../core/crypto.js';
import type { Config } from '../../core/config.js';
import { PLANS, limitsOf, type PlanName } from '../plans.js';
import { createDomain, normalizeDomain } from '../domains/create.js';
import { domainView } from '../domains/routes.js';
import { audit } from '../operations/audit.js';
import { adminErrors, projectBySlug, projectOut, projectProperties, projectSchema, slugParams, slugSchema } from './common.js';

export interface AdminOptions {
  config: Config;
  store: Store;
  invalidator: Invalidator;
  secret: string;
}

const nullableString = { type: ['string', 'null'] } as const;
const keyKinds = { kind: { type: 'string', enum: ['live', 'test'] }, scope: { type: 'string', enum: ['all', 'auth', 'users'] } } as const;
/** Every field of an auth audit entry (Fastify answers only the fields a response schema lists). */
const auditEntrySchema = {
  type: 'object',
  required: ['id', 'type', 'env', 'user_id', 'session_id', 'email', 'phone', 'provider', 'reason', 'suppressed', 'ip', 'user_agent', 'at'],
  properties: {
    id: { type: 'string' },
    type: { type: 'string', enum: [...AUTH_EVENT_TYPES] },
    env: { type: 'string', enum: ['live', 'test'] },
    user_id: nullableString,
    session_id: nullableString,
    email: { ...nullableString, description: 'Masked: j***@example.com.' },
    phone: { ...nullableString, description: 'Masked.' },
    provider: nullableString,
    reason: nullableString,
    suppressed: { type: 'integer', description: 'sign_in.failed: like failures the rate limit left out since the last one recorded.' },
    ip: nullableString,
    user_agent: nullableString,
    at: { type: 'string' },
  },
} as const;
const planAnswer = {
  type: 'object',
  required: [...projectSchema.required, 'daily_quota', 'monthly_quota', 'rate'],
  properties: { ...projectProperties, daily_quota: { type: 'integer' }, monthly_quota: { type: 'integer' }, rate: { type: 'integer' } },
} as const;
const auditOut = (e: AuditEntry) => ({
  id: e.id,
  type: e.type,
  env: e.env,
  user_id: e.userId,
  session_id: e.sessionId,
  email: e.email,
  phone: e.phone,
  provider: e.provider,
  reason: e.reason,
  suppressed: e.suppressed,
  ip: e.ip,
  user_agent: e.userAgent,
  at: new Date(e.at).toISOString(),
});

// Registered on the admin listener only (buildAdminApp in control/app.ts), whose guard checks the token.
export const adminRoutes: FastifyPluginAsync<AdminOptions> = async (app, { config, store, invalidator, secret }) => {
  const dkimSealer = sealer(secret, 'dkim');

  const project = (slug: string): Promise<Project> => projectBySlug(store, slug);

  const hide = { hide: true, tags: ['admin'] };

  app.post<{ Body: { name: string; slug: string } }>(
    '/admin/v1/projects',
    {
      schema: {
        ...hide,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['name', 'slug'],
          properties: { name: { type: 'string', minLength: 1, maxLength: 200 }, slug: slugSchema },
        },
        response: {
          201: {
            type: 'object',
            required: ['id', 'slug', 'keys'],
            properties: {
              id: { type: 'string' },
              slug: { type: 'string' },
              keys: { type: 'object', required: ['live', 'test'], properties: { live: { type: 'string' }, test: { type: 'string' } } },
            },
          },
          409: errorSchema,
          ...adminErrors,
        },
      },
    },
    async (req, reply) => {
      if (await store.projects.bySlug(req.body.slug)) throw new ApiError('CONFLICT', `Project ${req.body.slug} exists`);
      const now = clock.now();
      const id = crypto.randomUUID();
      const live = newApiKey(id, 'live', 'all', now);
      const test = newApiKey(id, 'test', 'all', now);
      await store.projects.create({ id, slug: req.body.slug, name: req.body.name, plan: config.defaultPlan, createdAt: now }, [live.row, test.row]);
      await audit(store, req, { action: 'project.create', target: `project:${req.body.slug}`, details: { keys: [live.row.id, test.row.id] } });
      return reply.code(201).send({ id, slug: req.body.slug, keys: { live: live.plain, test: test.plain } });
    },
  );

  app.get(
    '/admin/v1/projects',
    {
      schema: {
        ...hide,
        response: { 200: { type: 'object', required: ['data'], properties: { data: { type: 'array', items: projectSchema } } }, ...adminErrors },
      },
    },
    async () => ({ data: (await store.projects.list()).map(projectOut) }),
  );

  for (const action of ['pause', 'resume'] as const) {
    app.post<{ Params: { slug: string } }>(
      `/admin/v1/projects/:slug/${action}`,
      { schema: { ...hide, params: slugParams, response: { 200: projectSchema, ...adminErrors } } },
      async (req) => {
        const p = await project(req.params.slug);
        await store.projects.setStatus(p.id, action === 'pause' ? 'paused' : 'active');
        invalidator.publish('project', p.id);
        await audit(store, req, { action: `project.${action}`, target: `project:${p.slug}` });
        return projectOut({ ...p, status: action === 'pause' ? 'paused' : 'active' });
      },
    );
  }

  app.post<{ Params: { slug: string }; Body: { plan: PlanName; daily_quota?: number; monthly_quota?: number; rate?: number } }>(
    '/admin/v1/projects/:slug/plan',
    {
      schema: {
        ...hide,
        params: slugParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['plan'],
          properties: {
            plan: { enum: [...PLANS] },
            daily_quota: { type: 'integer', minimum: 0 },
            monthly_quota: { type: 'integer', minimum: 0 },
            rate: { type: 'integer', minimum: 1 },
          },
        },
        response: { 200: planAnswer, ...adminErrors },
      },
    },
    async (req) => {
      const p = await project(req.params.slug);
      const limits = { dailyQuota: req.body.daily_quota ?? null, monthlyQuota: req.body.monthly_quota ?? null, rateLimit: req.body.rate ?? null };
      await store.projects.setPlan(p.id, req.body.plan, limits);
      invalidator.publish('project', p.id);
      await audit(store, req, { action: 'project.plan', target: `project:${p.slug}`, details: { plan: req.body.plan, ...limits } });
      const updated = { ...p, plan: req.body.plan, ...limits };
      const l = limitsOf(updated, config);
      return { ...projectOut(updated), daily_quota: l.dailyQuota, monthly_quota: l.monthlyQuota, rate: l.rateLimit };
    },
  );

  // Operator override: the domain's DNS is managed elsewhere (or this is a local tour).
  app.post<{ Params: { slug: string }; Body: { name: string; force: boolean } }>(
    '/admin/v1/projects/:slug/domains/verify',
    {
      schema: {
        ...hide,
        params: slugParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['name', 'force'],
          properties: { name: { type: 'string', maxLength: 253 }, force: { const: true } },
        },
      },
    },
    async (req) => {
      const p = await project(req.params.slug);
      const name = normalizeDomain(req.body.name);
      const d = (await store.domains.byName(p.id, name)) ?? (await createDomain(store, config, dkimSealer, p.id, name));
      const now = clock.now();
      await store.domains.update(d.id, 'verified', d.records, d.checkedAt ?? now, d.verifiedAt ?? now);
      return domainView({ ...d, status: 'verified', verifiedAt: d.verifiedAt ?? now, checkedAt: d.checkedAt ?? now });
    },
  );

  app.post<{ Params: { slug: string }; Body: { kind: KeyKind; scope?: KeyScope } }>(
    '/admin/v1/projects/:slug/keys',
    {
      schema: {
        ...hide,
        params: slugParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['kind'],
          properties: { kind: { enum: ['live', 'test'] }, scope: { enum: ['all', 'auth', 'users'] } },
        },
        response: {
          201: {
            type: 'object',
            required: ['id', 'key', 'kind', 'scope', 'hint'],
            properties: {
              id: { type: 'string' },
              key: { type: 'string', description: 'Shown once: only its hash is kept.' },
              ...keyKinds,
              hint: { type: 'string' },
            },
          },
          ...adminErrors,
        },
      },
    },
    async (req, reply) => {
      const p = await project(req.params.slug);
      const key = newApiKey(p.id, req.body.kind, req.body.scope ?? 'all', clock.now());
      await store.apiKeys.create(key.row);
      await audit(store, req, {
        action: 'key.create',
        target: `project:${p.slug} key:${key.row.id}`,
        details: { kind: key.row.kind, scope: key.row.scope, hint: key.row.hint },
      });
      return reply.code(201).send({ id: key.row.id, key: key.plain, kind: key.row.kind, scope: key.row.scope, hint: key.row.hint });
    },
  );

  const keyList = {
    type: 'object',
    required: ['data'],
    properties: {
      data: {
        type: 'array',
        items: {
          type: 'object',
          required: ['id', 'kind', 'scope', 'hint', 'created_at', 'revoked_at'],
          properties: { id: { type: 'string' }, ...keyKinds, hint: { type: 'string' }, created_at: { type: 'string' }, revoked_at: nullableString },
        },
      },
    },
  } as const;
  app.get<{ Params: { slug: string } }>(
    '/admin/v1/projects/:slug/keys',
    { schema: { ...hide, params: slugParams, response: { 200: keyList, ...adminErrors } } },
    async (req) => {
      const p = await project(req.params.slug);
      return {
        data: (await store.apiKeys.list(p.id)).map((k) => ({
          id: k.id,
          kind: k.kind,
          scope: k.scope,
          hint: k.hint,
          created_at: new Date(k.createdAt).toISOString(),
          revoked_at: k.revokedAt ? new Date(k.revokedAt).toISOString() : null,
        })),
      };
    },
  );

  app.delete<{ Params: { slug: string; id: string } }>(
    '/admin/v1/projects/:slug/keys/:id',
    {
      schema: {
        ...hide,
        params: { type: 'object', required: ['slug', 'id'], properties: { slug: slugSchema, id: { type: 'string', maxLength: 100 } } },
        response: {
          200: { type: 'object', required: ['id', 'revoked'], properties: { id: { type: 'string' }, revoked: { type: 'boolean' } } },
          ...adminErrors,
        },
      },
    },
    async (req) => {
      const p = await project(req.params.slug);
      const revoked = await store.apiKeys.revoke(p.id, req.params.id, clock.now());
      if (!revoked) throw notFound('No such active key');
      invalidator.publish('key', revoked.hash);
      await audit(store, req, { action: 'key.revoke', target: `project:${p.slug} key:${req.params.id}` });
      return { id: req.params.id, revoked: true };
    },
  );

  // The auth audit log (auth/events.ts), newest first: `after` pages towards older entries, `before` towards newer.
  app.get<{ Params: { slug: string }; Querystring: { limit?: string; after?: string; before?: string; type?: AuthEventType } }>(
    '/admin/v1/projects/:slug/audit',
    {
      schema: {
        ...hide,
        params: slugParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            // Query strings are not coerced (control/http/fastify.ts): a number arrives as digits.
            limit: { type: 'string', pattern: '^(100|[1-9][0-9]?)$' },
            after: { type: 'string', maxLength: 100 },
            before: { type: 'string', maxLength: 100 },
            type: { type: 'string', enum: [...AUTH_EVENT_TYPES] },
          },
        },
        response: {
          200: {
            type: 'object',
            required: ['object', 'has_more', 'data'],
            properties: { object: { type: 'string', enum: ['list'] }, has_more: { type: 'boolean' }, data: { type: 'array', items: auditEntrySchema } },
          },
          ...adminErrors,
        },
      },
    },
    async (req) => {
      const p = await project(req.params.slug);
      const { after, before, type } = req.query;
      const limit = req.query.limit ? Number(req.query.limit) : 50;
      if (after !== undefined && before !== undefined) throw invalid('Give after or before, not both');
      const page = await store.audit.list(p.id, {
        limit,
        ...(after !== undefined ? { after } : {}),
        ...(before !== undefined ? { before } : {}),
        ...(type ? { type } : {}),
      });
      if (!page) throw invalid(`${after !== undefined ? 'after' : 'before'} names no audit entry of ${p.slug}`);
      return { object: 'list', has_more: page.hasMore, data: page.entries.map(auditOut) };
    },
  );
};
