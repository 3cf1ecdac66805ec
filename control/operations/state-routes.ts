// The live delivery state on the admin listener (behind the admin token; the CLI's `queue status`).
import type { FastifyPluginAsync } from 'fastify';
import type { DeliveryStateService } from './state.js';
import { queueStatusSchema } from './state-schema.js';

export interface StateRoutesOptions {
  state: DeliveryStateService;
}

const providerSchema = { type: 'string', pattern: '^[a-z0-9-]{1,40}$' } as const;
const slugSchema = { type: 'string', pattern: '^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$' } as const;

export const stateRoutes: FastifyPluginAsync<StateRoutesOptions> = async (app, { state }) => {
  app.get<{ Querystring: { provider?: string; project?: string } }>(
    '/admin/v1/queue/status',
    {
      schema: {
        hide: true,
        tags: ['admin'],
        querystring: { type: 'object', additionalProperties: false, properties: { provider: providerSchema, project: slugSchema } },
        response: { 200: queueStatusSchema },
      },
    },
    async (req) => state.status({ provider: req.query.provider || undefined, project: req.query.project || undefined }),
  );
};
