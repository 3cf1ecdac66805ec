// The operator's reset of a user's second factors (a lost phone and no backup code left): the admin
// listener's DELETE /admin/v1/projects/:slug/auth/users/:id/two-factor (?env=live|test, live by default),
// hidden from the public OpenAPI document as the rest of the admin API. The user signs in with the first
// factor alone afterwards (or enrols again when the project requires a second one).
import crypto from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { clock } from '../../core/clock.js';
import { notFound } from '../../core/errors.js';
import { prefixedId } from '../../core/ids.js';
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
        await ctx.projectsStore.operations.audit({
          id: prefixedId('op'),
          at: clock.now(),
          action: 'user.two_factor_reset',
          // The token's fingerprint, never the token (as the other admin changes).
          actor: crypto
            .createHash('sha256')
            .update((req.headers.authorization ?? '').replace(/^Bearer /, ''))
            .digest('hex')
            .slice(0, 12),
          target: `project:${p.slug} user:${user.id}`,
          details: { env: scope.env, removed },
          emails: null,
        });
        return { removed };
      },
    );
  };
