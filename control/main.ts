// The control process: storage, the HTTP API, dispatch to gateways and the
// delivery-event stream back. Started by the supervisor (control/supervisor.ts).
import { TrackingLinks } from './tracking/links.js';
import { TrackingRecorder } from './tracking/recorder.js';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../core/config.js';
import { adminToken, masterSecret } from '../core/secrets.js';
import { createLogger } from '../core/log.js';
import { localInvalidator, redisInvalidator } from '../core/invalidation.js';
import { connectRedis } from '../core/redis.js';
import { SharedCounters } from '../core/shared-counters.js';
import { openStore } from './store/open.js';
import { KeyAuthenticator } from './api-keys/authenticate.js';
import { GatewayClients } from './delivery/gateways.js';
import { Dispatcher, type DispatchDeliverability } from './delivery/dispatcher.js';
import { eventLoopLoad } from '../core/event-loop-load.js';
import { Scheduler } from './mail/scheduler.js';
import { ensureSystemSender } from './domains/system.js';
import { GatewayEventStream } from './delivery/gateway-events.js';
import { MailPipeline } from './mail/pipeline.js';
import { Registry } from '../core/metrics.js';
import { controlMetrics } from './metrics.js';
import { GatewayScrape } from './delivery/gateway-metrics.js';
import { buildApp, buildAdminApp, type AppDeps } from './app.js';
import { FastLane } from './http/fast-lane.js';
import { createAuth } from '../auth/plugin.js';
import { memoryCounters, sharedCounters } from './limits/counters.js';
import { RateLimiter } from './limits/rate-limit.js';
import { makeResolver } from '../core/dns.js';
import { sealer } from '../core/crypto.js';
import { WebhookSender } from './webhooks/sender.js';
import { WebhookTargets } from './webhooks/target.js';
import { AddressGuard } from '../core/net/address-guard.js';
import { startSmtpSubmission } from './smtp/server.js';
import { Idempotency } from './mail/idempotency.js';
import { startPublicGrpc } from './grpc/public.js';
import { MailTokens } from './unsubscribe/mail-tokens.js';
import { PacingService } from './pacing/service.js';
import { QueueControls } from './operations/controls.js';
import { audit } from './operations/audit.js';
import { DeliveryStateService } from './operations/state.js';
import { AcceptedTraffic, publishTraffic } from './operations/traffic.js';
import { OverviewService } from './operations/overview.js';
import { InboundReceiver } from './inbound/receiver.js';
import { ReceivingPush } from './inbound/push.js';

/**
 * The console's built front end: `<compiled tree>/console`, beside the compiled control/ this file is in
 * (Vite's outDir, deploy/build-console.ts). Run from source (tsx), the tree is dist/ or POSTGATE_BUILD_DIR.
 */
function consoleDir(): string {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts')) return path.resolve(path.dirname(here), '..', process.env.POSTGATE_BUILD_DIR || 'dist', 'console');
  return path.resolve(path.dirname(here), '..', 'console');
}

process.umask(0o077); // data-dir files are the service's alone (core/data-dir.ts), also when run without the supervisor
const config = loadConfig();
const log = createLogger('control', config.logLevel);
// Redis, when configured: what several control nodes share fast (invalidations, limit counters).
// Not needed to start: a node without it runs on per-node shares until it answers.
const redis = config.redisUrl ? connectRedis({ redisUrl: config.redisUrl, redisPrefix: config.redisPrefix }, log) : undefined;
const invalidator = redis ? redisInvalidator(redis, log) : localInvalidator();
// A database that cannot be opened (unreachable, wrong password, missing) is a configuration error:
// one line, and exit code 78 (EX_CONFIG) so the supervisor stops instead of restarting into it.
const store = await openStore(config, invalidator).catch((err: unknown) => {
  console.error(`postgate: ${String((err as Error).message ?? err).split('\n')[0]}`);
  return process.exit(78);
});
const metrics = new Registry();
const secret = masterSecret(config);
const gateways = new GatewayClients(config.gateways, secret);
const tokens = new MailTokens(secret);
// Open and click tracking (control/tracking): links signed with a key of their own; hits recorded in batches.
const trackingLinks = new TrackingLinks(secret);
const trackingRecorder = new TrackingRecorder(store.tracking, log);
const deliverability: DispatchDeliverability = {
  tokens,
  dkimSealer: sealer(secret, 'dkim'),
  baseUrl: config.baseUrl,
  tracking: { links: trackingLinks, https: config.tracking.https },
};
// How busy control's event loop is: the dispatcher holds back for a burst only while it is, and operators see it.
const loopLoad = eventLoopLoad();
const counted = controlMetrics(metrics, {
  loopLoad,
  storeStats: () => store.stats(),
  heldByProject: () => store.pacing.heldByProject(),
  trackingHits: () => ({ recorded: trackingRecorder.recorded, dropped: trackingRecorder.dropped }),
});
const dispatcher = new Dispatcher(
  store,
  gateways,
  log,
  counted.dispatched,
  deliverability,
  {
    rate: config.delivery.busyDispatchRate,
    holdMs: config.delivery.busyHoldSeconds * 1000,
  },
  loopLoad,
);
const pacing = new PacingService(store, gateways, config, log, dispatcher);
const queueControls = new QueueControls(store, gateways, invalidator, log, () => pacing.providers());
const deliveryState = new DeliveryStateService(store, gateways, log, () => pacing.providers(), redis);
// Receiving domains: pushed to the gateways at each change and each connection; what they receive is stored here.
const receivingPush = new ReceivingPush(store, gateways, invalidator, log);
const inboundReceiver = new InboundReceiver(store, log);
// Each (re)connection of a gateway's event stream may be a restarted gateway: give it the throttles.
const events = new GatewayEventStream(store, gateways, log, counted.deliveryEvents, {
  tokens,
  receive: (received) => inboundReceiver.receive(received),
  onConnect: (gw) => {
    void pacing.push(gw);
    // A restarted gateway holds delivery until it has the operator's controls again.
    void queueControls.push(gw);
    void receivingPush.push(gw);
  },
});
const access = new KeyAuthenticator(store, invalidator);
// Emails accepted per minute and hour, for the console's overview (in memory; on a cluster published to Redis).
const traffic = new AcceptedTraffic();
if (redis) publishTraffic(redis, traffic, log);
const overview = new OverviewService({
  store,
  state: deliveryState,
  suspensions: () => queueControls.list(),
  traffic,
  alerts: config.alerts,
  log,
  redis,
});
const pipeline = new MailPipeline(store, config, dispatcher, traffic);
const scheduler = new Scheduler(store, pipeline, dispatcher, log);
const resolver = makeResolver(config.dnsServers);
const webhookTargets = new WebhookTargets(new AddressGuard(config.webhooks.allowCidrs), resolver);
const webhooks = new WebhookSender(store, sealer(secret, 'webhooks'), config.webhooks, webhookTargets, log);

// One scrape covers the node: the gateways' own families follow control's.
metrics.append(new GatewayScrape(gateways, log).scrape);

// One set of fixed-window counters for every limit of the process (API rate, sign-in codes, SMTP, admin guard).
const counters = redis ? sharedCounters(new SharedCounters(redis, { role: 'control', nodes: config.redisNodes, log })) : memoryCounters();
const limiter = new RateLimiter(counters);
const fastLane = new FastLane(metrics, config.http);
const deps: AppDeps = {
  config,
  log,
  store,
  access,
  pipeline,
  metrics,
  invalidator,
  adminToken: adminToken(config),
  secret,
  counters,
  resolver,
  webhookTargets,
  fastLane,
  deliverability: { pacing, tokens },
  tracking: { links: trackingLinks, recorder: trackingRecorder },
  queueControls,
  deliveryState,
  overview,
  consoleDir: consoleDir(),
};
// The sign-in capability: composed here, the one place control knows it exists.
const auth = createAuth({
  config,
  log,
  fastLane,
  store,
  access,
  invalidator,
  secret,
  limiter,
  // Sign-in codes go through the one mail pipeline, as system mail: outside the project's quota and bulk rules.
  sendSystemMail: (caller, message) => pipeline.send(caller, message, { system: true }),
  onCodeSendsCapped: (slug) => counted.codeSendsCapped.with({ project: slug }).inc(),
  operatorAudit: (req, a) => audit(store, req, a),
});
const app = await buildApp(deps, auth);
const adminApp = await buildAdminApp(deps, auth);
// SMTP and gRPC listen before HTTP, so a healthy /healthz means every door is open.
const smtp = await startSmtpSubmission({ config, log, access, pipeline, limiter, idempotency: new Idempotency(store) });
const grpcApi = await startPublicGrpc({
  config,
  log,
  access,
  pipeline,
  store,
  counters,
  async checkSession(caller, token) {
    const { user, session } = await auth.sessions.check(caller, token);
    return { valid: true, userId: user.id, email: user.email ?? '', sessionId: session.id, expiresAt: new Date(session.expiresAt).toISOString() };
  },
});
// The admin listener first: a healthy public /healthz means the CLI can reach control too.
await adminApp.listen({ host: config.adminHost, port: config.adminPort });
await app.listen({ host: config.host, port: config.httpPort });
deliverability.system = await ensureSystemSender(store, config, deliverability.dkimSealer, log);
dispatcher.start();
scheduler.start();
events.start();
webhooks.start();
log.info(
  { http: `${config.host}:${config.httpPort}`, admin: `${config.adminHost}:${config.adminPort}`, gateways: gateways.list.map((g) => g.name) },
  'control ready',
);

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'control draining');
  const force = setTimeout(() => process.exit(1), 10_000);
  force.unref();
  await Promise.all([app.close(), adminApp.close()]); // stops accepting; in-flight requests finish (their writes commit)
  await trackingRecorder.close().catch(() => undefined); // the hits the last requests saw
  await Promise.all([smtp.close(), grpcApi.close()]);
  dispatcher.stop();
  scheduler.stop();
  webhooks.stop();
  receivingPush.stop();
  await events.stop();
  gateways.close();
  await store.close();
  await redis?.close();
  log.info('control stopped');
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
