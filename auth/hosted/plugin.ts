// The hosted widget and the browser side of the auth API, registered by the
// auth plugin before its key routes: it shares the auth services (one rate
// limiter, one session cache) and its hooks (origin rules for browsers) reach
// the key routes too, which is why it does not encapsulate itself.
import type { FastifyPluginAsync } from 'fastify';
import type { AuthContext } from '../context.js';
import { corsHooks } from './cors.js';
import { Hosted } from './project.js';
import { hostedRoutes } from './routes.js';

export function hostedPlugin(ctx: AuthContext): FastifyPluginAsync {
  const plugin: FastifyPluginAsync = async (app) => {
    const hosted = new Hosted(ctx);
    corsHooks(app, hosted);
    await app.register(hostedRoutes(ctx, hosted));
  };
  // What fastify-plugin does: the hooks land in the auth plugin's context, so routes registered after inherit them.
  Object.assign(plugin, { [Symbol.for('skip-override')]: true });
  return plugin;
}
