// The auth API (spec/auth-api.md) as a Fastify plugin registered by control:
// the key-protected routes and the OAuth callback; its admin API goes on the admin listener.
import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../core/config.js';
import type { Logger } from '../core/log.js';
import type { Invalidator } from '../core/invalidation.js';
import { clock } from '../core/clock.js';
import type { Store } from '../control/store/store.js';
import type { Access } from '../control/access.js';
import type { MailPipeline } from '../control/mail/pipeline.js';
import type { FastLane } from '../control/fast-lane.js';
import { createAuthContext } from './context.js';
import { adminRoutes } from './admin.js';
import { callbackRoutes, keyRoutes } from './routes.js';
import { bindSessions } from './sessions.js';
import { settings } from './settings.js';
import { hostedPlugin } from './hosted/plugin.js';

export interface AuthPluginOptions {
  config: Config;
  log: Logger;
  store: Store;
  access: Access;
  pipeline: MailPipeline;
  invalidator: Invalidator;
  secret: string;
  /** Called when a project reaches its hourly cap of sign-in code sends (an operator alert metric). */
  onCodeSendsCapped?: (projectSlug: string) => void;
  /** Where GET /session answers from memory without Fastify (control/fast-lane.ts); absent, Fastify answers every check. */
  fastLane?: FastLane;
}

/**
 * The auth capability, composed by control: `plugin` goes on the public listener, `admin` on
 * the admin listener (control/admin/app.ts); both share one context.
 */
export function createAuth(opts: AuthPluginOptions): { plugin: FastifyPluginAsync; admin: FastifyPluginAsync } {
  const ctx = createAuthContext(opts);
  bindSessions(ctx.sessions);
  const plugin: FastifyPluginAsync = async (app) => {
    await app.register(hostedPlugin(ctx)); // first: its browser-origin hooks reach the key routes
    await app.register(keyRoutes(ctx, opts.fastLane));
    await app.register(callbackRoutes(ctx));
    const prune = setInterval(() => {
      ctx.store.prune(clock.now()).catch((err: unknown) => opts.log.warn({ err }, 'auth prune failed'));
    }, settings.pruneEveryMs);
    prune.unref();
    app.addHook('onClose', async () => clearInterval(prune));
  };
  return { plugin, admin: adminRoutes(ctx) };
}

export { checkSession, type SessionInfo } from './sessions.js';
