// The mail API (docs/mail-api.md) as a Fastify plugin. Every route has a schema
// that validates it and describes it in the OpenAPI document.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, invalid, notFound } from '../../core/errors.js';
import { sealer } from '../../core/crypto.js';
import type { Resolver } from '../../core/dns.js';
import type { Counters } from '../limits/counters.js';
import { checkProjectRate } from '../limits/rate-limit.js';
import { domainRoutes } from '../domains/routes.js';
import { suppressionRoutes } from '../suppressions/routes.js';
import { analyticsRoutes } from '../analytics/routes.js';
import { webhookRoutes } from '../webhooks/routes.js';
import { templateRoutes } from '../templates/routes.js';
import type { WebhookTargets } from '../webhooks/target.js';
import { pacingRoutes } from '../pacing/routes.js';
import { inboundRoutes } from '../inbound/routes.js';
import { DownloadLinks } from '../inbound/links.js';
import type { PacingService } from '../pacing/service.js';
import { type KeyAuthenticator, MAIL_KEYS, type Caller } from '../api-keys/authenticate.js';
import type { Store } from '../store/index.js';
import type { MailPipeline, SendInput } from './pipeline.js';
import { errorSchema } from '../http/schemas.js';
import { emailListQuerySchema, emailListSchema, emailSchema, scheduledAtSchema, sendRequestSchema, sendResponseSchema, sendSchemaError } from './schema.js';
import type { Config } from '../../core/config.js';
import { emailListItem, emailView } from './email-view.js';
import { attachmentBodyBytes, checkBatchAttachments } from './attachments.js';
import { clock } from '../../core/clock.js';
import type { ScheduleChange } from '../store/index.js';
import type { EmailStatus } from '../../common/status.js';
import { scheduledTime } from './pipeline.js';
import { Idempotency, MAX_IDEMPOTENCY_KEY, resumeMany, resumeOne } from './idempotency.js';

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

const errors = { 400: errorSchema, 401: errorSchema, 404: errorSchema, 409: errorSchema, 422: errorSchema, 429: errorSchema };
const idempotencyKeyHeader = {
  type: 'string',
  minLength: 1,
  maxLength: MAX_IDEMPOTENCY_KEY,
  description:
    'Optional. The same key with the same request within 24 h answers the first answer again (with `Idempotent-Replayed: true`) and sends nothing new; with another request 409 IDEMPOTENCY_CONFLICT; while the first is under way 409 IDEMPOTENCY_IN_PROGRESS. Per project; 1 to 256 printable ASCII characters.',
} as const;
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
      const { headers } = checkProjectRate(counters, req.caller!.project, config);
      reply.headers(headers);
    }),
  );

  await app.register(emailRoutes, { config, store, pipeline });
  await app.register(domainRoutes, { config, store, resolver, dkimSealer: sealer(secret, 'dkim') });
  await app.register(suppressionRoutes, { store });
  await app.register(analyticsRoutes, { store });
  await app.register(webhookRoutes, { store, sealer: sealer(secret, 'webhooks'), targets: webhookTargets });
  await app.register(templateRoutes, { config, store });
  if (pacing) await app.register(pacingRoutes, { pacing });
  await app.register(inboundRoutes, { store, links: new DownloadLinks(secret, config.baseUrl) });
};

/** The batch's validation mode: today's per-item answer when the header is absent. */
function batchMode(header: string | string[] | undefined): 'strict' | 'permissive' | undefined {
  if (header === undefined) return undefined;
  const v = String(header).trim().toLowerCase();
  if (v === 'strict' || v === 'permissive') return v;
  throw invalid('x-batch-validation must be strict or permissive');
}

const emailRoutes: FastifyPluginAsync<Pick<MailRoutesOptions, 'config' | 'store' | 'pipeline'>> = async (app, { config, store, pipeline }) => {
  // html and text may both be maxBodyBytes, as JSON (escapes) and with room for the rest, and the
  // attachments their total in base64 (a batch carries no more in all: checkBatchAttachments).
  const sendBodyLimit = 2 * config.limits.maxBodyBytes + 1024 * 1024 + attachmentBodyBytes(config.limits);
  const idempotency = new Idempotency(store);
  const stopPruning = idempotency.startPruning((err) => app.log.warn({ err }, 'idempotency key prune failed'));
  app.addHook('onClose', async () => stopPruning());
  app.post<{ Body: SendInput }>(
    '/v1/emails',
    {
      bodyLimit: sendBodyLimit,
      schema: {
        summary: 'Send one email',
        tags: ['emails'],
        security,
        headers: { type: 'object', properties: { 'idempotency-key': idempotencyKeyHeader } },
        body: sendRequestSchema(config.limits),
        response: { 202: sendResponseSchema, ...errors },
      },
      schemaErrorFormatter: (errs, dataVar) => {
        const e = sendSchemaError(errs);
        return new Error(`${dataVar}${e.path} ${e.message}`);
      },
    },
    async (req, reply) =>
      idempotency.reply(req, reply, req.caller!.project.id, [req.body], 1, async (a) => ({
        status: 202,
        body: await resumeOne(a, (id) => pipeline.send(req.caller!, req.body, { id })),
      })),
  );

  app.post<{ Body: unknown[] }>(
    '/v1/emails/batch',
    {
      bodyLimit: sendBodyLimit,
      schema: {
        summary: 'Send up to 100 emails; each is judged on its own, answers in request order',
        description:
          'Without `x-batch-validation`, every item gets its own answer in `data`. `strict` (what the Resend SDK sends): one invalid item refuses the whole batch with 422 and nothing is sent. `permissive`: valid items are sent, `data` lists them and `errors` the others with their index.',
        headers: {
          type: 'object',
          properties: { 'x-batch-validation': { type: 'string', enum: ['strict', 'permissive'] }, 'idempotency-key': idempotencyKeyHeader },
        },
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
              errors: {
                type: 'array',
                description: 'With `x-batch-validation: permissive`: the items not sent, by their index in the request.',
                items: {
                  type: 'object',
                  properties: { index: { type: 'integer' }, message: { type: 'string' }, code: { type: 'string' }, id: { type: 'string' } },
                },
              },
            },
          },
          ...errors,
        },
      },
      // Items are validated one by one in the pipeline, so one bad item does not refuse the others.
      validatorCompiler: ({ schema, httpPart }) => {
        // Headers are checked where they are read (batchMode, the idempotency key).
        if (httpPart !== 'body') return (data: unknown) => ({ value: data });
        const s = schema as { maxItems?: number };
        return (data: unknown) => {
          if (!Array.isArray(data)) return { error: new Error('body must be an array of send requests') };
          if (!data.length) return { error: new Error('body must hold at least one email') };
          if (data.length > (s.maxItems ?? 100)) return { error: new Error(`at most ${s.maxItems ?? 100} emails per batch`) };
          try {
            checkBatchAttachments(data, config.limits);
          } catch (err) {
            return { error: err as Error };
          }
          return { value: data };
        };
      },
    },
    async (req, reply) =>
      // The key covers the validation mode too: the same items in another mode are another request.
      idempotency.reply(req, reply, req.caller!.project.id, [req.headers['x-batch-validation'] ?? null, req.body], req.body.length, async (a) => {
        const mode = batchMode(req.headers['x-batch-validation']);
        if (mode === 'strict') await pipeline.checkBatch(req.caller!, req.body);
        const results = await resumeMany(a, req.body, (reqs, ids) => pipeline.sendMany(req.caller!, reqs, { ids }));
        if (mode !== 'permissive') return { status: 202, body: { data: results.map((r) => (r instanceof ApiError ? r.toJSON() : r)) } };
        // Resend's permissive answer: what was sent in `data`, what was not in `errors` with its index.
        const data: unknown[] = [];
        const errors: unknown[] = [];
        for (const [index, r] of results.entries()) {
          if (r instanceof ApiError) errors.push({ index, message: r.message, code: r.code, ...r.extra });
          else data.push(r);
        }
        return { status: 202, body: { data, errors } };
      }),
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

  app.get<{ Querystring: ListQuery }>(
    '/v1/emails',
    {
      schema: {
        summary: 'List emails, newest first, a page at a time',
        description:
          'Cursor pagination as Resend: `after` (an email id) gives the next, older page, `before` the newer one; `has_more` says whether more lie that way. Filters: status, tag, and a creation range (`since`, `until`).',
        tags: ['emails'],
        security,
        querystring: emailListQuerySchema,
        response: { 200: emailListSchema, ...errors },
      },
    },
    async (req) => {
      const q = req.query;
      if (q.after !== undefined && q.before !== undefined) throw invalid('give after or before, not both');
      // A cursor that is no email id names no place in the list: refused, not read as "from the start".
      for (const c of ['after', 'before'] as const)
        if (q[c] !== undefined && !EMAIL_ID.test(q[c])) throw invalid(`${c} must be an email id, as the list gives it`);
      const page = await store.emails.list(req.caller!.project.id, {
        limit: q.limit ? Number(q.limit) : 20,
        ...(q.after ? { after: q.after } : {}),
        ...(q.before ? { before: q.before } : {}),
        ...(q.status ? { status: q.status } : {}),
        ...(q.tag ? { tag: q.tag } : {}),
        ...(q.since ? { since: instant('since', q.since) } : {}),
        ...(q.until ? { until: instant('until', q.until) } : {}),
      });
      return { object: 'list', has_more: page.hasMore, data: page.emails.map(emailListItem) };
    },
  );

  const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 100 } } } as const;
  const changed = { type: 'object', properties: { object: { type: 'string', enum: ['email'] }, id: { type: 'string' }, status: { type: 'string' } } } as const;

  app.patch<{ Params: { id: string }; Body: { scheduled_at: string } }>(
    '/v1/emails/:id',
    {
      schema: {
        summary: 'Reschedule a scheduled email',
        description: 'Only an email still `scheduled` can be moved (409 otherwise). The new time is at most 30 days ahead; a past time sends it at once.',
        tags: ['emails'],
        security,
        params: idParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['scheduled_at'],
          properties: { scheduled_at: scheduledAtSchema },
        },
        response: { 200: changed, ...errors },
      },
    },
    async (req) => {
      const now = clock.now();
      // A past time means "now": the scheduler releases it on its next tick.
      const at = scheduledTime(req.body.scheduled_at, now) ?? now;
      scheduleAnswer(await store.emails.reschedule(req.caller!.project.id, req.params.id, at, now), 'rescheduled');
      return { object: 'email', id: req.params.id, status: 'scheduled' };
    },
  );

  app.post<{ Params: { id: string } }>(
    '/v1/emails/:id/cancel',
    {
      schema: {
        summary: 'Cancel a scheduled email before it leaves',
        description: 'The email becomes `canceled` and is never sent. Only an email still `scheduled` can be canceled (409 otherwise).',
        tags: ['emails'],
        security,
        params: idParams,
        response: { 200: changed, ...errors },
      },
    },
    async (req) => {
      scheduleAnswer(await store.emails.cancel(req.caller!.project.id, req.params.id, clock.now()), 'canceled');
      return { object: 'email', id: req.params.id, status: 'canceled' };
    },
  );
};

interface ListQuery {
  limit?: string;
  after?: string;
  before?: string;
  /** One of EMAIL_STATUSES (the schema's enum). */
  status?: EmailStatus;
  tag?: string;
  since?: string;
  until?: string;
}

/** Email ids are UUIDs (time-ordered, core/ids.ts). */
const EMAIL_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A query's ISO 8601 date or date-time as epoch ms; anything else is bad input (400). */
export function instant(field: string, value: string): number {
  const ms = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/i.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw invalid(`${field} must be an ISO 8601 date or date-time`);
  return ms;
}

function scheduleAnswer(change: ScheduleChange, verb: string): void {
  if (change.kind === 'not_found') throw notFound('Email not found');
  if (change.kind === 'not_scheduled') throw new ApiError('CONFLICT', `Only a scheduled email can be ${verb}; this one is ${change.status}`);
}
