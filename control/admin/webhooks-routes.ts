// The console's Webhooks page: every endpoint (of one project or all) with how its latest messages
// stand, an endpoint's messages with the event each carried and the HTTP status the receiver
// answered, and "retry now" for a pending or failed message (audited). The signing secret never
// leaves the store.
import type { FastifyPluginAsync } from 'fastify';
import { ApiError, notFound } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import type { Store, WebhookDelivery } from '../store/index.js';
import { audit } from '../operations/audit.js';
import { adminErrors, iso, limitQuery, projectBySlug, slugSchema, slugsOf } from './common.js';
import { errorSchema } from '../http/schemas.js';
import { eventsOfFilter } from '../webhooks/events.js';

/** How many of an endpoint's latest messages `recent` counts (bounded per endpoint, whatever its history). */
export const RECENT = 100;

const idSchema = { type: 'string', pattern: '^[A-Za-z0-9_-]{1,100}$' } as const;
const idParams = { type: 'object', required: ['id'], properties: { id: idSchema } } as const;
const STATUSES = ['pending', 'delivered', 'failed'] as const;

/** The sender records a receiver's non-2xx answer as `HTTP <status>` (control/webhooks/sender.ts); anything else is a failure class. */
export const answerCodeOf = (lastError: string | null): number | null => {
  const m = lastError ? /^HTTP (\d{3})$/.exec(lastError) : null;
  return m ? Number(m[1]) : null;
};

const eventTypeOf = (payload: string): string | null => {
  try {
    const type = (JSON.parse(payload) as { type?: unknown }).type;
    return typeof type === 'string' ? type : null;
  } catch {
    return null;
  }
};

const count = { type: 'integer' } as const;
const webhookSchema = {
  type: 'object',
  required: ['id', 'project', 'url', 'events', 'enabled', 'created_at', 'recent'],
  properties: {
    id: { type: 'string' },
    project: { type: 'string', description: 'The slug.' },
    url: { type: 'string' },
    events: {
      type: 'array',
      items: { type: 'string' },
      description: 'What it subscribed to, as event names (email.sent, user.created…), as the public API lists them.',
    },
    enabled: { type: 'boolean' },
    created_at: { type: 'string' },
    recent: {
      type: 'object',
      description: `How its latest ${RECENT} messages stand.`,
      required: [...STATUSES],
      properties: { pending: count, delivered: count, failed: count },
    },
  },
} as const;

const deliverySchema = {
  type: 'object',
  required: ['id', 'event_type', 'status', 'attempt', 'last_error', 'answer_code', 'created_at', 'next_attempt_at', 'delivered_at'],
  properties: {
    id: { type: 'string' },
    event_type: { type: ['string', 'null'], description: 'The type of the message (email.bounced, session.created…).' },
    status: { type: 'string', enum: [...STATUSES] },
    attempt: { type: 'integer', description: 'Attempts made.' },
    last_error: { type: ['string', 'null'], description: 'HTTP <status>, or the class of failure (timeout, connection refused…).' },
    answer_code: { type: ['integer', 'null'], description: "The HTTP status of the receiver's last answer when it was not 2xx." },
    created_at: { type: 'string' },
    next_attempt_at: { type: ['string', 'null'], description: 'When it is tried next (pending only).' },
    delivered_at: { type: ['string', 'null'] },
  },
} as const;

const deliveryOut = (d: WebhookDelivery) => ({
  id: d.id,
  event_type: eventTypeOf(d.payload),
  status: d.status,
  attempt: d.attempt,
  last_error: d.lastError,
  answer_code: answerCodeOf(d.lastError),
  created_at: new Date(d.createdAt).toISOString(),
  next_attempt_at: d.status === 'pending' ? iso(d.nextAttemptAt) : null,
  delivered_at: iso(d.deliveredAt),
});

export const webhookAdminRoutes: FastifyPluginAsync<{ store: Store }> = async (app, { store }) => {
  app.get<{ Querystring: { project?: string } }>(
    '/admin/v1/webhooks',
    {
      schema: {
        hide: true,
        tags: ['admin'],
        querystring: { type: 'object', additionalProperties: false, properties: { project: slugSchema } },
        response: { 200: { type: 'object', required: ['data'], properties: { data: { type: 'array', items: webhookSchema } } }, ...adminErrors },
      },
    },
    async (req) => {
      const project = req.query.project !== undefined ? await projectBySlug(store, req.query.project) : undefined;
      const hooks = project ? await store.webhooks.list(project.id) : await store.webhooks.all();
      const [slugs, recent] = await Promise.all([
        slugsOf(
          store,
          hooks.map((w) => w.projectId),
          project,
        ),
        Promise.all(hooks.map((w) => store.webhooks.recent(w.id, RECENT))),
      ]);
      return {
        data: hooks.map((w, i) => ({
          id: w.id,
          project: slugs.get(w.projectId)!,
          url: w.url,
          events: eventsOfFilter(w.statuses),
          enabled: w.enabled,
          created_at: new Date(w.createdAt).toISOString(),
          recent: recent[i]!,
        })),
      };
    },
  );

  app.get<{ Params: { id: string }; Querystring: { status?: WebhookDelivery['status']; limit?: string } }>(
    '/admin/v1/webhooks/:id/deliveries',
    {
      schema: {
        hide: true,
        tags: ['admin'],
        params: idParams,
        querystring: { type: 'object', additionalProperties: false, properties: { status: { type: 'string', enum: [...STATUSES] }, limit: limitQuery } },
        response: { 200: { type: 'object', required: ['data'], properties: { data: { type: 'array', items: deliverySchema } } }, ...adminErrors },
      },
    },
    async (req) => {
      if (!(await store.webhooks.byId(req.params.id))) throw notFound(`No webhook ${req.params.id}`);
      const limit = req.query.limit ? Number(req.query.limit) : 50;
      return { data: (await store.webhooks.deliveries(req.params.id, limit, req.query.status)).map(deliveryOut) };
    },
  );

  app.post<{ Params: { id: string } }>(
    '/admin/v1/webhooks/deliveries/:id/retry',
    {
      schema: {
        hide: true,
        tags: ['admin'],
        params: idParams,
        response: {
          202: {
            type: 'object',
            required: ['id', 'status', 'next_attempt_at'],
            properties: { id: { type: 'string' }, status: { type: 'string', enum: ['pending'] }, next_attempt_at: { type: 'string' } },
          },
          409: errorSchema,
          ...adminErrors,
        },
      },
    },
    async (req, reply) => {
      const d = await store.webhooks.delivery(req.params.id);
      if (!d) throw notFound(`No webhook message ${req.params.id}`);
      if (d.status === 'delivered') throw new ApiError('CONFLICT', 'The message was delivered already');
      // The sender would only mark it failed again.
      const hook = await store.webhooks.byId(d.webhookId);
      if (!hook?.enabled) throw new ApiError('CONFLICT', `The endpoint is ${hook ? 'disabled' : 'deleted'}`);
      const retried = await store.webhooks.retryNow(d.id, clock.now());
      if (!retried) throw new ApiError('CONFLICT', 'The message was delivered already');
      const p = await store.projects.byId(d.projectId);
      await audit(store, req, {
        action: 'webhook.retry',
        target: `project:${p?.slug ?? d.projectId} webhook:${d.webhookId} message:${d.id}`,
        details: { status: d.status, attempt: d.attempt, last_error: d.lastError },
      });
      // The sender polls for due messages every half second: no wake-up is needed.
      return reply.code(202).send({ id: retried.id, status: 'pending', next_attempt_at: new Date(retried.nextAttemptAt).toISOString() });
    },
  );
};
