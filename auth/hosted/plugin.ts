// The hosted widget and the browser side of the auth API, registered by the
// auth plugin before its key routes: it shares the auth services (one rate
// limiter, one session cache) and its hooks (origin rules for browsers) reach
// the key routes too, which is why it does not encapsulate itself.
import type { FastifyPluginAsync } from 'fastify';
import type { AuthServices } from '../services.js';
import { assets } from './assets.js';
import { corsHooks } from './cors.js';
import { Hosted } from './project.js';
import { hostedRoutes } from './routes.js';

export function hostedPlugin(ctx: AuthServices): FastifyPluginAsync {
  const plugin: FastifyPluginAsync = async (app) => {
    const hosted = new Hosted(ctx);
    corsHooks(app, hosted);
    await app.register(hostedRoutes(ctx, hosted));
    // Bundle the browser files while nobody waits; a failure is retried (and reported) on first use.
    app.addHook('onReady', async () => {
      assets().catch((err: unknown) => ctx.log.warn({ err }, 'hosted widget assets failed to build'));
    });
  };
  // What fastify-plugin does: the hooks land in the auth plugin's context, so routes registered after inherit them.
  Object.assign(plugin, { [Symbol.for('skip-override')]: true });
  return plugin;
}
