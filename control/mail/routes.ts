// The mail API (docs/mail-api.md) as a Fastify plugin. Every route has a schema
// that validates it and describes it in the OpenAPI document.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, notFound } from '../../core/errors.js';
import { sealer } from '../../core/crypto.js';
import type { Resolver } from '../../core/dns.js';
import type { Counters } from '../limits/counters.js';
import { checkRate } from '../limits/rate-limit.js';
import { limitsOf } from '../plans.js';
import { domainRoutes } from '../domains/routes.js';
import { suppressionRoutes } from '../suppressions/routes.js';
import { analyticsRoutes } from '../analytics/routes.js';
import { webhookRoutes } from '../webhooks/routes.js';
import type { WebhookTargets } from '../webhooks/target.js';
import { pacingRoutes } from '../pacing/routes.js';
import type { PacingService } from '../pacing/service.js';
import { type KeyAuthenticator, MAIL_KEYS, type Caller } from '../api-keys/authenticate.js';
import type { Store } from '../store/index.js';
import type { MailPipeline, SendRequest } from './pipeline.js';
import { errorSchema } from '../http/schemas.js';
import { emailSchema, sendRequestSchema, sendResponseSchema } from './schema.js';
import type { Config } from '../../core/config.js';
import { emailView } from './email-view.js';

export interface MailRoutesOptions {
  config: Config;
  store: Store;
  access: KeyAuthenticator;
  pipeline: MailPipeline;
  counters: Counters;
  secret: string;
  resolver: Resolver;
  webhookTargets: WebhookTargets;
  /** GET /v1/pacing and announcements, when control runs pacing (control/pacing). */
  pacing?: PacingService;
}

declare module 'fastify' {
  interface FastifyRequest {
    caller?: Caller;
  }
}

const errors = { 400: errorSchema, 401: errorSchema, 404: errorSchema, 429: errorSchema };
const security: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { serviceKey: [] }];

/** The whole mail API: one key check and one rate limit in front of every route. */
export const mailRoutes: FastifyPluginAsync<MailRoutesOptions> = async (
  app,
  { config, store, access, pipeline, counters, secret, resolver, webhookTargets, pacing },
) => {
  app.decorateRequest('caller', undefined);
  app.addHook(
    'onRequest',
    access.hook(MAIL_KEYS, (req: FastifyRequest, reply: FastifyReply) => {
      const { headers } = checkRate(counters, `api:${req.caller!.project.id}`, limitsOf(req.caller!.project, config).rateLimit);
      reply.headers(headers);
    }),
  );

  await app.register(emailRoutes, { config, store, pipeline });
  await app.register(domainRoutes, { config, store, resolver, dkimSealer: sealer(secret, 'dkim') });
  await app.register(suppressionRoutes, { store });
  await app.register(analyticsRoutes, { store });
  await app.register(webhookRoutes, { store, sealer: sealer(secret, 'webhooks'), targets: webhookTargets });
  if (pacing) await app.register(pacingRoutes, { pacing });
};

const emailRoutes: FastifyPluginAsync<Pick<MailRoutesOptions, 'config' | 'store' | 'pipeline'>> = async (app, { config, store, pipeline }) => {
  // html and text may both be maxBodyBytes, as JSON (escapes) and with room for the rest.
  const sendBodyLimit = 2 * config.limits.maxBodyBytes + 1024 * 1024;
  app.post<{ Body: SendRequest }>(
    '/v1/emails',
    {
      bodyLimit: sendBodyLimit,
      schema: {
        summary: 'Send one email',
        tags: ['emails'],
        security,
        body: sendRequestSchema(config.limits),
        response: { 202: sendResponseSchema, ...errors },
      },
    },
    async (req, reply) => {
      const accepted = await pipeline.send(req.caller!, req.body);
      return reply.code(202).send(accepted);
    },
  );

  app.post<{ Body: unknown[] }>(
    '/v1/emails/batch',
    {
      bodyLimit: sendBodyLimit,
      schema: {
        summary: 'Send up to 100 emails; each is judged on its own, answers in request order',
        tags: ['emails'],
        security,
        body: { type: 'array', minItems: 1, maxItems: 100, items: sendRequestSchema(config.limits) },
        response: {
          202: {
            type: 'object',
            properties: {
              data: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: { id: { type: 'string' }, status: { type: 'string' }, error: { type: 'string' }, code: { type: 'string' } },
                },
              },
            },
          },
          ...errors,
        },
      },
      // Items are validated one by one in the pipeline, so one bad item does not refuse the others.
      validatorCompiler: ({ schema }) => {
        const s = schema as { maxItems?: number };
        return (data: unknown) => {
          if (!Array.isArray(data)) return { error: new Error('body must be an array of send requests') };
          if (!data.length) return { error: new Error('body must hold at least one email') };
          if (data.length > (s.maxItems ?? 100)) return { error: new Error(`at most ${s.maxItems ?? 100} emails per batch`) };
          return { value: data };
        };
      },
    },
    async (req, reply) => {
      const results = await pipeline.sendMany(req.caller!, req.body);
      return reply.code(202).send({ data: results.map((r) => (r instanceof ApiError ? r.toJSON() : r)) });
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/emails/:id',
    {
      schema: {
        summary: 'Email details and its delivery events, oldest first',
        tags: ['emails'],
        security,
        params: { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 100 } } },
        response: { 200: emailSchema, ...errors },
      },
    },
    async (req) => {
      const view = await emailView(store, req.caller!.project.id, req.params.id);
      if (!view) throw notFound('Email not found');
      return view;
    },
  );
};
