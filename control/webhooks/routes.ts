// /v1/webhooks: endpoints that receive every status change (and auth event) they ask for,
// signed with the Standard Webhooks scheme. Requests and answers are also Resend's
// ({endpoint, events}, `object`, `signing_secret`, `status`), so its SDK drives these routes.
import crypto from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { invalid, notFound } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import type { Sealer } from '../../core/crypto.js';
import type { Store, WebhookChange, WebhookRow } from '../store/index.js';
import { allOrPageQuerySchema, errorSchema } from '../http/schemas.js';
import { newWebhookSecret } from './signature.js';
import type { WebhookTargets } from './target.js';
import { EVENT_NAMES, FILTER_TOKENS, eventsOfFilter, filterOfEvents } from './events.js';

const security: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { serviceKey: [] }];
const errors = { 400: errorSchema, 401: errorSchema, 404: errorSchema, 429: errorSchema };
const strings = { type: 'array', items: { type: 'string' } } as const;
const webhookSchema = {
  type: 'object',
  properties: {
    object: { type: 'string', enum: ['webhook'] },
    id: { type: 'string' },
    url: { type: 'string' },
    endpoint: { type: 'string', description: 'The same as url (Resend)' },
    statuses: { ...strings, description: 'The filter: email statuses and event kinds, auth event types; empty = every email event' },
    events: { ...strings, description: 'The filter in Resend event names' },
    status: { type: 'string', enum: ['enabled', 'disabled'] },
    secret: { type: 'string', description: 'whsec_… signing secret (Standard Webhooks)' },
    signing_secret: { type: 'string', description: 'The same as secret (Resend)' },
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
/** An endpoint in the list: as Resend's list, without its signing secret (create and the single GET give it). */
const { secret: _secret, signing_secret: _signingSecret, deliveries: _deliveries, ...listedProperties } = webhookSchema.properties;
const listedWebhookSchema = { type: 'object', properties: listedProperties } as const;
const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 100 } } } as const;
/** The fields POST and PATCH share; the checks across fields are in filterOf and targetOf. */
const fields = {
  url: { type: 'string', maxLength: 2000 },
  endpoint: { type: 'string', maxLength: 2000, description: 'Resend: the same as url' },
  statuses: { type: 'array', uniqueItems: true, maxItems: FILTER_TOKENS.length, items: { type: 'string', enum: [...FILTER_TOKENS] } },
  events: {
    type: 'array',
    maxItems: EVENT_NAMES.length,
    items: { type: 'string', maxLength: 100 },
    description: 'Resend: the filter in event names (email.sent, email.delivery_delayed, user.created…)',
  },
} as const;

interface Fields {
  url?: string;
  endpoint?: string;
  statuses?: string[];
  events?: string[];
}

/** The filter a request sets (one of `statuses` and `events`), or undefined when it sets none. */
function filterOf(body: Fields): string[] | undefined {
  if (body.statuses && body.events) throw invalid('Give statuses or events, not both');
  if (body.statuses) return body.statuses;
  if (!body.events) return undefined;
  const r = filterOfEvents(body.events);
  if ('unknown' in r) throw invalid(`Unknown event ${JSON.stringify(r.unknown).slice(0, 120)}; known events: ${EVENT_NAMES.join(', ')}`);
  return r.filter;
}

export const webhookRoutes: FastifyPluginAsync<{ store: Store; sealer: Sealer; targets: WebhookTargets }> = async (app, { store, sealer, targets }) => {
  const listed = (w: WebhookRow) => ({
    object: 'webhook',
    id: w.id,
    url: w.url,
    endpoint: w.url,
    statuses: w.statuses,
    events: eventsOfFilter(w.statuses),
    status: w.enabled ? 'enabled' : 'disabled',
    created_at: new Date(w.createdAt).toISOString(),
  });
  const view = (w: WebhookRow) => {
    const secret = sealer.open(w.secret);
    return { ...listed(w), secret, signing_secret: secret };
  };

  /** The target a request sets (`url` or `endpoint`), checked against the SSRF rules; undefined when it sets none. */
  async function targetOf(body: Fields): Promise<string | undefined> {
    if (body.url !== undefined && body.endpoint !== undefined) throw invalid('Give url or endpoint, not both');
    const raw = body.url ?? body.endpoint;
    if (raw === undefined) return undefined;
    const name = body.url !== undefined ? 'url' : 'endpoint';
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw invalid(`${name} must be an absolute http(s) URL`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalid(`${name} must be an absolute http(s) URL`);
    if (url.username || url.password) throw invalid(`${name} must not carry credentials`);
    const refusal = await targets.refusal(url);
    if (refusal) throw invalid(name === 'url' ? refusal : refusal.replace(/^url/, 'endpoint'));
    return url.toString();
  }

  app.post<{ Body: Fields }>(
    '/v1/webhooks',
    {
      schema: {
        summary: 'Register an endpoint for status changes (every email event when no filter is given) and auth events it lists',
        tags: ['webhooks'],
        security,
        body: { type: 'object', additionalProperties: false, properties: fields },
        response: { 201: webhookSchema, ...errors },
      },
    },
    async (req, reply) => {
      const statuses = filterOf(req.body);
      const url = await targetOf(req.body);
      if (url === undefined) throw invalid('url (or endpoint) is required');
      const row: WebhookRow = {
        id: crypto.randomUUID(),
        projectId: req.caller!.project.id,
        url,
        statuses: statuses ?? [],
        secret: sealer.seal(newWebhookSecret()),
        createdAt: clock.now(),
        enabled: true,
      };
      await store.webhooks.create(row);
      return reply.code(201).send(view(row));
    },
  );

  app.get<{ Querystring: { limit?: string; after?: string; before?: string } }>(
    '/v1/webhooks',
    {
      schema: {
        summary: 'List endpoints, oldest first (every one unless `limit` is given), without their signing secrets',
        tags: ['webhooks'],
        security,
        querystring: allOrPageQuerySchema('webhook', 'endpoints'),
        response: {
          200: {
            type: 'object',
            properties: { object: { type: 'string', enum: ['list'] }, has_more: { type: 'boolean' }, data: { type: 'array', items: listedWebhookSchema } },
          },
          ...errors,
        },
      },
    },
    async (req) => {
      const { limit, after, before } = req.query;
      if (after !== undefined && before !== undefined) throw invalid('Give after or before, not both');
      // A project has few endpoints: the page is cut from the whole list.
      let list = await store.webhooks.list(req.caller!.project.id);
      const cursor = after ?? before;
      if (cursor !== undefined) {
        const at = list.findIndex((w) => w.id === cursor);
        if (at < 0) throw invalid(`${after !== undefined ? 'after' : 'before'} names no webhook of this project`);
        list = after !== undefined ? list.slice(at + 1) : list.slice(0, at);
      }
      const n = limit ? Number(limit) : list.length;
      const page = before !== undefined ? list.slice(Math.max(0, list.length - n)) : list.slice(0, n);
      // The secrets stay out of the list (a key that may list need not sign), and are not even unsealed.
      return { object: 'list', has_more: page.length < list.length, data: page.map(listed) };
    },
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

  app.patch<{ Params: { id: string }; Body: Fields & { status?: 'enabled' | 'disabled' } }>(
    '/v1/webhooks/:id',
    {
      schema: {
        summary: 'Change an endpoint: its URL, its filter, or its status (a disabled endpoint gets nothing, and its pending messages are given up)',
        tags: ['webhooks'],
        security,
        params: idParams,
        body: {
          type: 'object',
          additionalProperties: false,
          minProperties: 1,
          properties: { ...fields, status: { type: 'string', enum: ['enabled', 'disabled'] } },
        },
        response: { 200: webhookSchema, ...errors },
      },
    },
    async (req) => {
      const change: WebhookChange = {};
      const statuses = filterOf(req.body);
      if (statuses) change.statuses = statuses;
      const url = await targetOf(req.body);
      if (url !== undefined) change.url = url;
      if (req.body.status) change.enabled = req.body.status === 'enabled';
      const w = await store.webhooks.update(req.caller!.project.id, req.params.id, change);
      if (!w) throw notFound('Webhook not found');
      return view(w);
    },
  );

  app.post<{ Params: { id: string } }>(
    '/v1/webhooks/:id/signing-secret/rotate',
    {
      schema: {
        summary: 'A new signing secret; messages sent from now on are signed with it',
        tags: ['webhooks'],
        security,
        params: idParams,
        response: { 200: webhookSchema, ...errors },
      },
    },
    async (req) => {
      const w = await store.webhooks.update(req.caller!.project.id, req.params.id, { secret: sealer.seal(newWebhookSecret()) });
      if (!w) throw notFound('Webhook not found');
      const { object, id, secret, signing_secret } = view(w);
      return { object, id, secret, signing_secret };
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
        response: {
          200: { type: 'object', properties: { object: { type: 'string', enum: ['webhook'] }, id: { type: 'string' }, deleted: { type: 'boolean' } } },
          ...errors,
        },
      },
    },
    async (req) => {
      if (!(await store.webhooks.remove(req.caller!.project.id, req.params.id))) throw notFound('Webhook not found');
      return { object: 'webhook', id: req.params.id, deleted: true };
    },
  );
};
