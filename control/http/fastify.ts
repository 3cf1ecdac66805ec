// One Fastify setup for both listeners (public and admin): the one error shape
// ({error, code}) for everything, including what Node's parser refuses, and the
// HTTP metrics (answers by status, errors by code, duration by route pattern).
import type { Duplex } from 'node:stream';
import type { Server } from 'node:http';
import Fastify, { LogController, type FastifyInstance, type FastifyError, type FastifyBaseLogger, type FastifyReply, type FastifyServerFactory } from 'fastify';
import '../../core/ajv-length.js'; // before Fastify compiles any route schema
import { ApiError, errorBody } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import type { Config } from '../../core/config.js';
import type { Registry } from '../../core/metrics.js';
import { bodyBudgetMetrics, httpMetrics, methodLabel, statusClass } from './metrics.js';
import { bodyBudget } from './body-budget.js';
import { lingerOnClose } from './linger.js';
import { jsonHasNul, NUL_REFUSED } from '../../core/nul.js';

/**
 * Requests Node's parser refuses never reach Fastify (bad method or framing, NUL in a header,
 * headers over the limit, a request that timed out): they get the one error shape too.
 */
function clientErrorAnswer(err: NodeJS.ErrnoException, socket: Duplex): void {
  const [status, reason, code, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'HEADERS_TOO_LARGE', 'Request headers are too large']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || err.code === 'ERR_HTTP_HEADERS_TIMEOUT'
        ? [408, 'Request Timeout', 'REQUEST_TIMEOUT', 'The request did not arrive in time']
        : [400, 'Bad Request', 'INVALID_REQUEST', 'Malformed HTTP request'];
  if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
  // The one error shape (core/errors.ts errorBody), for codes only this socket-level answer has.
  const body = JSON.stringify({ error: message, code, name: code.toLowerCase(), message, statusCode: status });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** A %-encoded C0 control character or DEL: never part of an id, cursor, slug, tag or any other value in a URL here. */
const ENCODED_CONTROL = /%(?:[01][0-9a-f]|7f)/i;

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

export interface FastifyOptions {
  config: Config;
  log: Logger;
  metrics: Registry;
  /** The public listener's server (fast-lane.ts); the admin listener uses Node's. */
  serverFactory?: FastifyServerFactory;
  /** Hold request bodies to http.inFlightBodyBytes in total (control/http/body-budget.ts): the public listener. */
  budgetBodies?: boolean;
}

export function newFastify({ config, log, metrics, serverFactory, budgetBodies = false }: FastifyOptions): FastifyInstance<Server> {
  const app = Fastify({
    ...(serverFactory ? { serverFactory } : { requestTimeout: config.http.requestTimeoutMs, keepAliveTimeout: config.http.keepAliveTimeoutMs }),
    loggerInstance: log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    // One logger for every request: a pino child per request costs more than the request.
    childLoggerFactory: (logger) => logger,
    bodyLimit: config.http.bodyLimitBytes,
    clientErrorHandler: clientErrorAnswer,
    frameworkErrors: (err, _req, reply) => {
      (reply as FastifyReply).code(400).send(errorBody('INVALID_REQUEST', err.code === 'FST_ERR_BAD_URL' ? 'Malformed URL' : 'Malformed request'));
    },
    trustProxy: false,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
  }) as unknown as FastifyInstance<Server>;
  const http = httpMetrics(metrics);

  // An empty body with a JSON content type is no body: SDKs (Resend's, for one) and curl send it on
  // calls that need none. A route that needs a body still answers 400 from its schema. Anything
  // else goes through Fastify's own parser (prototype-poisoning checks included).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (!text.trim()) return done(null, undefined);
    if (jsonHasNul(text)) return done(new ApiError('INVALID_REQUEST', `The body ${NUL_REFUSED}`), undefined);
    parseJson(req, text, done);
  });
  // Control characters in the path or query string (a NUL answered 500 on PostgreSQL, 404 on SQLite):
  // refused before any route decodes them, alike on both backends. Node refuses raw ones itself.
  app.addHook('onRequest', (req, _reply, done) => {
    if (req.url.includes('%') && ENCODED_CONTROL.test(req.url)) return done(new ApiError('INVALID_REQUEST', 'The URL must not contain control characters'));
    done();
  });

  app.setErrorHandler((err: FastifyError, req, reply) => {
    const apiErr = toApiError(err);
    // An unreachable database is an outage, not a bug: a warning with its cause (503 and Retry-After go to the client).
    if (apiErr.code === 'STORE_UNAVAILABLE') req.log.warn({ url: req.url, cause: String((err as Error).cause ?? '') }, 'store unavailable');
    else if (apiErr.status >= 500) req.log.error({ err, url: req.url }, 'request failed');
    http.errors.with({ code: apiErr.code }).inc();
    reply.code(apiErr.status).headers(apiErr.headers).send(apiErr.toJSON());
  });
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send(errorBody('NOT_FOUND', `No route ${req.method} ${req.url.split('?')[0]}`));
  });
  const responses = new Map<number, { inc(): void }>();
  const durations = new Map<string, { observe(v: number): void }>();
  // Counted as the answer is sent: an onResponse hook would cost a 'finish' listener per response (~20% of a cached session check).
  // The duration runs from the request routed to its answer ready (Fastify's elapsedTime), by route pattern, never the raw path.
  app.addHook('onSend', (req, reply, payload, done) => {
    const status = reply.statusCode;
    let counted = responses.get(status);
    if (!counted) responses.set(status, (counted = http.responses.with({ status: String(status) })));
    counted.inc();
    const route = req.routeOptions.url ?? 'unmatched';
    const key = `${req.method} ${status} ${route}`;
    let timed = durations.get(key);
    if (!timed) durations.set(key, (timed = http.duration.with({ route, method: methodLabel(req.method), status_class: statusClass(status) })));
    timed.observe(reply.elapsedTime / 1000);
    // Answered and closing before the body has all arrived (413, 503): the client must still read the answer.
    if (!req.raw.complete && reply.getHeader('connection') === 'close') lingerOnClose(req.raw.socket);
    done(null, payload);
  });
  if (budgetBodies) {
    const budget = bodyBudget(config.http.inFlightBodyBytes, config.http.activeBodyBytes, config.http.bodyLimitBytes);
    app.addHook('onRequest', budget.hook);
    bodyBudgetMetrics(metrics, budget);
  }

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    reply.type('text/plain; version=0.0.4');
    // Control's families and, appended, its gateways' (control/delivery/gateway-metrics.ts).
    return metrics.scrape();
  });
  return app;
}
