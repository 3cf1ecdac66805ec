import type { FastifyPluginAsync } from 'fastify';
import { notFound } from '../../core/errors.js';
import { errorSchema } from '../../control/http/schemas.js';
import type { Env } from '../../control/store/index.js';
import type { AuthServices } from '../services.js';
import type { TwoFactorService } from './service.js';

const slug = { type: 'string', pattern: '^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$' } as const;

export const twoFactorAdminRoutes =
  (ctx: AuthServices, service: TwoFactorService): FastifyPluginAsync =>
  async (app) => {
    app.delete<{ Params: { slug: string; id: string }; Querystring: { env?: Env } }>(
      '/admin/v1/projects/:slug/auth/users/:id/two-factor',
      {
        schema: {
          hide: true,
          tags: ['admin'],
          params: { type: 'object', required: ['slug', 'id'], properties: { slug, id: { type: 'string', format: 'uuid' } } },
          querystring: {
            type: 'object',
            additionalProperties: false,
            properties: { env: { type: 'string', enum: ['live', 'test'], description: 'The environment (live when omitted)' } },
          },
          response: {
            200: {
              type: 'object',
              required: ['removed'],
              properties: { removed: { type: 'boolean', description: 'False when the user had no second factor' } },
            },
            400: errorSchema,
            401: errorSchema,
            404: errorSchema,
          },
        },
      },
      async (req) => {
        const p = await ctx.projectsStore.projects.bySlug(req.params.slug);
        if (!p) throw notFound(`No project ${req.params.slug}`);
        const scope = { projectId: p.id, env: req.query.env ?? 'live' };
        const user = await ctx.store.userById(req.params.id);
        // Another project's or environment's user: the same answer as none.
        if (!user || user.projectId !== scope.projectId || user.env !== scope.env) throw notFound('No such user');
        const removed = await service.resetForUser(scope, user.id);
        await ctx.operatorAudit(req, { action: 'user.two_factor_reset', target: `project:${p.slug} user:${user.id}`, details: { env: scope.env, removed } });
        return { removed };
      },
    );
  };
