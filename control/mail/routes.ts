// The mail API (spec/mail-api.md) as a Fastify plugin. Every route has a schema
// that validates it and describes it in the OpenAPI document.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { notFound } from '../../core/errors.js';
import { Access, MAIL_KEYS, type Caller } from '../access.js';
import type { Store } from '../store/store.js';
import type { MailPipeline, SendRequest } from './pipeline.js';
import { emailSchema, errorSchema, sendRequestSchema, sendResponseSchema } from './schema.js';
import type { Config } from '../../core/config.js';
import { emailView } from './view.js';

export interface MailRoutesOptions {
  config: Config;
  store: Store;
  access: Access;
  pipeline: MailPipeline;
}

declare module 'fastify' {
  interface FastifyRequest {
    caller?: Caller;
  }
}

const errors = { 400: errorSchema, 401: errorSchema, 404: errorSchema, 429: errorSchema };
const security: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { serviceKey: [] }];

export const mailRoutes: FastifyPluginAsync<MailRoutesOptions> = async (app, { config, store, access, pipeline }) => {
  app.decorateRequest('caller', undefined);
  app.addHook('onRequest', async (req: FastifyRequest) => {
    req.caller = await access.resolve(Access.keyOf(req), MAIL_KEYS);
  });

  app.post<{ Body: SendRequest }>('/v1/emails', {
    schema: {
      summary: 'Send one email',
      tags: ['emails'],
      security,
      body: sendRequestSchema(config.limits),
      response: { 202: sendResponseSchema, ...errors },
    },
  }, async (req, reply) => {
    const accepted = await pipeline.send(req.caller!, req.body);
    return reply.code(202).send(accepted);
  });

  app.get<{ Params: { id: string } }>('/v1/emails/:id', {
    schema: {
      summary: 'Email details and its delivery events, oldest first',
      tags: ['emails'],
      security,
      params: { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 100 } } },
      response: { 200: emailSchema, ...errors },
    },
  }, async (req) => {
    const view = await emailView(store, req.caller!.project.id, req.params.id);
    if (!view) throw notFound('Email not found');
    return view;
  });
};
