// /v1/webhooks: endpoints that receive every status change they ask for,
// signed with the Standard Webhooks scheme.
import crypto from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { invalid, notFound } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import type { Sealer } from '../../core/crypto.js';
import type { Store, WebhookRow } from '../store/index.js';
import { errorSchema } from '../http/schemas.js';
import { EVENT_KINDS } from '../../common/status.js';
import { newWebhookSecret } from './signature.js';
import type { WebhookTargets } from './target.js';

const security: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { serviceKey: [] }];
const errors = { 400: errorSchema, 401: errorSchema, 404: errorSchema, 429: errorSchema };
const KINDS = [...EVENT_KINDS];
const webhookSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    url: { type: 'string' },
    statuses: { type: 'array', items: { type: 'string' } },
    secret: { type: 'string', description: 'whsec_… signing secret (Standard Webhooks)' },
    created_at: { type: 'string' },
    deliveries: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          status: { type: 'string' },
          attempt: { type: 'integer' },
          last_error: { type: ['string', 'null'] },
          created_at: { type: 'string' },
          next_attempt_at: { type: 'string' },
        },
      },
    },
  },
} as const;
const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 100 } } } as const;

export const webhookRoutes: FastifyPluginAsync<{ store: Store; sealer: Sealer; targets: WebhookTargets }> = async (app, { store, sealer, targets }) => {
  const view = (w: WebhookRow) => ({
    id: w.id,
    url: w.url,
    statuses: w.statuses,
    secret: sealer.open(w.secret),
    created_at: new Date(w.createdAt).toISOString(),
  });

  app.post<{ Body: { url: string; statuses?: string[] } }>(
    '/v1/webhooks',
    {
      schema: {
        summary: 'Register an endpoint for status changes (all statuses when `statuses` is omitted)',
        tags: ['webhooks'],
        security,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['url'],
          properties: {
            url: { type: 'string', maxLength: 2000 },
            statuses: { type: 'array', uniqueItems: true, maxItems: KINDS.length, items: { type: 'string', enum: KINDS } },
          },
        },
        response: { 201: webhookSchema, ...errors },
      },
    },
    async (req, reply) => {
      let url: URL;
      try {
        url = new URL(req.body.url);
      } catch {
        throw invalid('url must be an absolute http(s) URL');
      }
      if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalid('url must be an absolute http(s) URL');
      if (url.username || url.password) throw invalid('url must not carry credentials');
      const refusal = await targets.refusal(url);
      if (refusal) throw invalid(refusal);
      const row: WebhookRow = {
        id: crypto.randomUUID(),
        projectId: req.caller!.project.id,
        url: url.toString(),
        statuses: req.body.statuses ?? [],
        secret: sealer.seal(newWebhookSecret()),
        createdAt: clock.now(),
      };
      await store.webhooks.create(row);
      return reply.code(201).send(view(row));
    },
  );

  app.get(
    '/v1/webhooks',
    {
      schema: {
        summary: 'List endpoints',
        tags: ['webhooks'],
        security,
        response: { 200: { type: 'object', properties: { data: { type: 'array', items: webhookSchema } } }, ...errors },
      },
    },
    async (req) => ({ data: (await store.webhooks.list(req.caller!.project.id)).map(view) }),
  );

  app.get<{ Params: { id: string } }>(
    '/v1/webhooks/:id',
    {
      schema: {
        summary: 'One endpoint and its latest deliveries',
        tags: ['webhooks'],
        security,
        params: idParams,
        response: { 200: webhookSchema, ...errors },
      },
    },
    async (req) => {
      const w = await store.webhooks.get(req.caller!.project.id, req.params.id);
      if (!w) throw notFound('Webhook not found');
      const deliveries = (await store.webhooks.deliveries(w.id)).map((d) => ({
        id: d.id,
        status: d.status,
        attempt: d.attempt,
        last_error: d.lastError,
        created_at: new Date(d.createdAt).toISOString(),
        next_attempt_at: new Date(d.nextAttemptAt).toISOString(),
      }));
      return { ...view(w), deliveries };
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/v1/webhooks/:id',
    {
      schema: {
        summary: 'Delete an endpoint',
        tags: ['webhooks'],
        security,
        params: idParams,
        response: { 200: { type: 'object', properties: { id: { type: 'string' }, deleted: { type: 'boolean' } } }, ...errors },
      },
    },
    async (req) => {
      if (!(await store.webhooks.remove(req.caller!.project.id, req.params.id))) throw notFound('Webhook not found');
      return { id: req.params.id, deleted: true };
    },
  );
};
