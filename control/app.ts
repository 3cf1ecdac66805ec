// The HTTP side of control: one Fastify instance, one error shape ({error, code}),
// plugins registered per area (mail, admin; auth later).
import type { Duplex } from 'node:stream';
import Fastify, { LogController, type FastifyInstance, type FastifyError, type FastifyBaseLogger, type FastifyReply } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { ApiError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { Config } from '../core/config.js';
import type { Invalidator } from '../core/invalidation.js';
import type { Store } from './store/store.js';
import type { Access } from './access.js';
import type { MailPipeline } from './mail/pipeline.js';
import type { Metrics } from './metrics.js';
import type { Counters } from './limits/counters.js';
import type { Resolver } from '../core/dns.js';
import type { WebhookTargets } from './webhooks/target.js';
import { mailRoutes } from './mail/routes.js';
import { adminRoutes } from './admin/routes.js';
import { authPlugin } from '../auth/plugin.js';
import type { PacingService } from './pacing/service.js';
import { pacingAdminRoutes } from './pacing/admin.js';
import type { Tokens } from './unsubscribe/tokens.js';
import { FastLane } from './fast-lane.js';
import { unsubscribeRoutes } from './unsubscribe/routes.js';

export interface AppDeps {
  config: Config;
  log: Logger;
  store: Store;
  access: Access;
  pipeline: MailPipeline;
  metrics: Metrics;
  invalidator: Invalidator;
  adminToken: string;
  secret: string;
  counters: Counters;
  resolver: Resolver;
  webhookTargets: WebhookTargets;
  /** Pacing and one-click unsubscribe (control/pacing, control/unsubscribe). */
  deliverability?: { pacing: PacingService; tokens: Tokens };
}

/**
 * Requests Node's parser refuses never reach Fastify (bad method or framing, NUL in a header,
 * headers over the limit, a request that timed out): they get the one error shape too.
 */
function clientErrorAnswer(err: NodeJS.ErrnoException, socket: Duplex): void {
  const [status, reason, code, message] =
    err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request Header Fields Too Large', 'HEADERS_TOO_LARGE', 'Request headers are too large']
    : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || err.code === 'ERR_HTTP_HEADERS_TIMEOUT' ? [408, 'Request Timeout', 'REQUEST_TIMEOUT', 'The request did not arrive in time']
    : [400, 'Bad Request', 'INVALID_REQUEST', 'Malformed HTTP request'];
  if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
  const body = JSON.stringify({ error: message, code });
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

/** Maps whatever was thrown to the one error shape; never leaks internals. */
function toApiError(err: FastifyError | Error): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as FastifyError;
  if (e.validation) return new ApiError('INVALID_REQUEST', e.message);
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('PAYLOAD_TOO_LARGE', 'Request body is too large');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('INVALID_REQUEST', 'Body must not be empty');
  }
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) return new ApiError('INVALID_REQUEST', e.message);
  return new ApiError('INTERNAL', 'Internal error');
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, log, metrics } = deps;
  const fastLane = new FastLane(metrics, config.http);
  const app = Fastify({
    serverFactory: (handler) => fastLane.server(handler),
    loggerInstance: log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    // One logger for every request: a pino child per request costs more than the request.
    childLoggerFactory: (logger) => logger,
    // Small by default; the send routes take the large one (control/mail/routes.ts).
    bodyLimit: config.http.bodyLimitBytes,
    clientErrorHandler: clientErrorAnswer,
    frameworkErrors: (err, _req, reply) => {
      (reply as FastifyReply).code(400).send({ error: err.code === 'FST_ERR_BAD_URL' ? 'Malformed URL' : 'Malformed request', code: 'INVALID_REQUEST' });
    },
    trustProxy: false,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
  });

  app.setErrorHandler((err: FastifyError, req, reply) => {
    const apiErr = toApiError(err);
    if (apiErr.status >= 500) req.log.error({ err, url: req.url }, 'request failed');
    metrics.inc(`postgate_http_errors_total{code="${apiErr.code}"}`);
    reply.code(apiErr.status).headers(apiErr.headers).send(apiErr.toJSON());
  });
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send({ error: `No route ${req.method} ${req.url.split('?')[0]}`, code: 'NOT_FOUND' });
  });
  const responseKeys = new Map<number, string>();
  // Counted as the answer is sent: an onResponse hook would cost a 'finish' listener per response (~20% of a cached session check).
  app.addHook('onSend', (_req, reply, payload, done) => {
    let key = responseKeys.get(reply.statusCode);
    if (!key) responseKeys.set(reply.statusCode, (key = `postgate_http_responses_total{status="${reply.statusCode}"}`));
    metrics.inc(key);
    done(null, payload);
  });

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    reply.type('text/plain; version=0.0.4');
    return metrics.render();
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'postgate', version: '1', description: 'Email sending and sign-in API. Errors are {error, code}.' },
      servers: [{ url: config.baseUrl }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'Project API key (live kind)' },
          serviceKey: { type: 'apiKey', in: 'header', name: 'X-Service-Key' },
          sessionToken: { type: 'http', scheme: 'bearer', description: 'A session token from a sign-in (auth API: session, sign-out)' },
        },
      },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(mailRoutes, { config, store: deps.store, access: deps.access, pipeline: deps.pipeline, counters: deps.counters, secret: deps.secret, resolver: deps.resolver, webhookTargets: deps.webhookTargets, pacing: deps.deliverability?.pacing });
  await app.register(authPlugin, { config, log, fastLane, store: deps.store, access: deps.access, pipeline: deps.pipeline, invalidator: deps.invalidator, secret: deps.secret, adminToken: deps.adminToken, onCodeSendsCapped: (slug) => metrics.inc(`postgate_auth_code_sends_capped_total{project="${slug}"}`) });
  await app.register(adminRoutes, { config, store: deps.store, token: deps.adminToken, invalidator: deps.invalidator, secret: deps.secret });
  if (deps.deliverability) {
    await app.register(pacingAdminRoutes, { config, store: deps.store, pacing: deps.deliverability.pacing, token: deps.adminToken });
    await app.register(unsubscribeRoutes, { store: deps.store, tokens: deps.deliverability.tokens });
  }
  return app;
}
