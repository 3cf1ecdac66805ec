// The HTTP side of control: one Fastify instance, one error shape ({error, code}),
// plugins registered per area. Two listeners: the public API and the admin API.
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import './http/lazy-docs.js'; // before @fastify/swagger and swagger-ui load
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Logger } from '../core/log.js';
import type { Config } from '../core/config.js';
import type { Invalidator } from '../core/invalidation.js';
import type { Store } from './store/index.js';
import type { KeyAuthenticator } from './api-keys/authenticate.js';
import type { MailPipeline } from './mail/pipeline.js';
import type { Registry } from '../core/metrics.js';
import { adminRefused } from './metrics.js';
import type { Counters } from './limits/counters.js';
import type { Resolver } from '../core/dns.js';
import type { WebhookTargets } from './webhooks/target.js';
import { mailRoutes } from './mail/routes.js';
import { adminRoutes } from './admin/routes.js';
import { projectDetailRoutes } from './admin/project-detail.js';
import { suppressionAdminRoutes } from './admin/suppressions-routes.js';
import { webhookAdminRoutes } from './admin/webhooks-routes.js';
import { signInActivityRoutes } from './admin/signin-activity.js';
import { adminGuard } from './admin/guard.js';
import { ConsoleSessions } from './console/sessions.js';
import { sessionRoutes } from './console/session-routes.js';
import { consoleStatic } from './console/static.js';
import { newFastify } from './http/fastify.js';
import { completeOpenapi } from './http/openapi.js';
import { adminOpenapiOptions } from './console/admin-openapi.js';
import type { PacingService } from './pacing/service.js';
import { pacingAdminRoutes } from './pacing/admin-routes.js';
import type { MailTokens } from './unsubscribe/mail-tokens.js';
import type { FastLane } from './http/fast-lane.js';
import { unsubscribeRoutes } from './unsubscribe/routes.js';
import { trackingRoutes } from './tracking/routes.js';
import type { TrackingLinks } from './tracking/links.js';
import type { TrackingRecorder } from './tracking/recorder.js';
import type { QueueControls } from './operations/controls.js';
import { controlRoutes } from './operations/control-routes.js';
import type { DeliveryStateService } from './operations/state.js';
import { stateRoutes } from './operations/state-routes.js';
import { emailsRoutes } from './operations/emails-routes.js';
import type { OverviewService } from './operations/overview.js';
import { overviewRoutes } from './operations/overview-routes.js';
import { inboundDownloadRoutes } from './inbound/routes.js';
import { DownloadLinks } from './inbound/links.js';

export interface AppDeps {
  config: Config;
  log: Logger;
  store: Store;
  access: KeyAuthenticator;
  pipeline: MailPipeline;
  metrics: Registry;
  invalidator: Invalidator;
  adminToken: string;
  secret: string;
  counters: Counters;
  resolver: Resolver;
  webhookTargets: WebhookTargets;
  /** Answers cached session checks before Fastify (control/http/fast-lane.ts); auth fills it. */
  fastLane: FastLane;
  /** Pacing and one-click unsubscribe (control/pacing, control/unsubscribe). */
  deliverability?: { pacing: PacingService; tokens: MailTokens };
  /** Open and click tracking's pixel and redirects (control/tracking), served by Host on the public listener. */
  tracking?: { links: TrackingLinks; recorder: TrackingRecorder };
  /** The operator's queue control: suspensions, send now, cancel, the audit log (control/operations). */
  queueControls?: QueueControls;
  /** The live delivery state summed over the gateways (control/operations/state.ts). */
  deliveryState?: DeliveryStateService;
  /** The console's overview: series, queue depth, suspended and shaped providers, alerts (control/operations/overview.ts). */
  overview?: OverviewService;
  /** The console's built front end (`<compiled tree>/console`), served on the admin listener at /console/ (control/console/static.ts). */
  consoleDir?: string;
}

/** The public listener: the mail API, the auth API, the hosted widget and one-click unsubscribe. */
export async function buildApp(deps: AppDeps, auth: { plugin: FastifyPluginAsync }): Promise<FastifyInstance> {
  const { config } = deps;
  const app = newFastify({ config, log: deps.log, metrics: deps.metrics, serverFactory: (handler) => deps.fastLane.server(handler), budgetBodies: true });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'postgate',
        version: '1',
        description: 'Email sending and sign-in API. Errors are {error, code}.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [{ url: config.baseUrl, description: 'This postgate' }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'Project API key (live kind)' },
          serviceKey: { type: 'apiKey', in: 'header', name: 'X-Service-Key' },
          sessionToken: { type: 'http', scheme: 'bearer', description: 'A session token from a sign-in (auth API: session, sign-out)' },
        },
      },
    },
    // operationIds, `security: []` on public routes, every answer documented (control/http/openapi.ts).
    transformObject: (document) => completeOpenapi(document),
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(mailRoutes, {
    config,
    store: deps.store,
    access: deps.access,
    pipeline: deps.pipeline,
    counters: deps.counters,
    secret: deps.secret,
    resolver: deps.resolver,
    webhookTargets: deps.webhookTargets,
    pacing: deps.deliverability?.pacing,
  });
  await app.register(auth.plugin);
  if (deps.deliverability) await app.register(unsubscribeRoutes, { store: deps.store, tokens: deps.deliverability.tokens });
  // Received mail's signed download links: outside the key check (the link is the credential).
  await app.register(inboundDownloadRoutes, { store: deps.store, links: new DownloadLinks(deps.secret, config.baseUrl) });
  if (deps.tracking) await app.register(trackingRoutes, deps.tracking);
  return app;
}

/**
 * The admin listener (POSTGATE_ADMIN_HOST/PORT, loopback by default): what the CLI calls.
 * Apart from /healthz and /metrics, every route is behind the admin token guard.
 */
export async function buildAdminApp(deps: AppDeps, auth: { admin: FastifyPluginAsync }): Promise<FastifyInstance> {
  const { config } = deps;
  const app = newFastify({ config, log: deps.log, metrics: deps.metrics });
  // The admin OpenAPI document (GET /admin/v1/openapi.json; npm run gen types the console with it).
  await app.register(swagger, adminOpenapiOptions());
  const refused = adminRefused(deps.metrics);
  // The console's sessions live in this process's memory: a restart signs every operator out.
  const sessions = new ConsoleSessions({ idleMs: config.consoleIdleMinutes * 60_000, maxMs: config.consoleMaxHours * 3_600_000 });
  const guard = adminGuard({
    token: deps.adminToken,
    counters: deps.counters,
    log: deps.log,
    onRefused: (reason) => refused.with({ reason }).inc(),
    sessions,
  });
  // The console's sign-in is outside the guard (it is where the token is given); it throttles as the guard does.
  await app.register(sessionRoutes, { store: deps.store, guard, sessions });
  // The console's files: public (the data they fetch is behind the guard), on this listener only.
  if (deps.consoleDir !== undefined) await app.register(consoleStatic, { dir: deps.consoleDir, log: deps.log });
  await app.register(async (admin) => {
    admin.addHook('onRequest', guard);
    admin.get('/admin/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
    await admin.register(adminRoutes, { config, store: deps.store, invalidator: deps.invalidator, secret: deps.secret });
    // The console's Projects, Suppressions, Webhooks and Sign-in pages (control/admin).
    await admin.register(projectDetailRoutes, { config, store: deps.store });
    await admin.register(suppressionAdminRoutes, { store: deps.store });
    await admin.register(webhookAdminRoutes, { store: deps.store });
    await admin.register(signInActivityRoutes, { store: deps.store });
    // The console's Emails page: search and one email's timeline (control/operations/emails-routes.ts).
    await admin.register(emailsRoutes, { store: deps.store });
    await admin.register(auth.admin);
    if (deps.deliverability) await admin.register(pacingAdminRoutes, { config, store: deps.store, pacing: deps.deliverability.pacing });
    if (deps.queueControls) await admin.register(controlRoutes, { store: deps.store, controls: deps.queueControls });
    if (deps.deliveryState) await admin.register(stateRoutes, { state: deps.deliveryState });
    if (deps.overview) await admin.register(overviewRoutes, { overview: deps.overview });
  });
  return app;
}
