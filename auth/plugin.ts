// The auth API as a capability that control composes: its public Fastify plugin (the
// key-protected routes, the hosted widget and the OAuth callback), its admin API for
// the admin listener, the session checker for the rest of control, and its CLI commands.
import type { FastifyPluginAsync } from 'fastify';
import { clock } from '../core/clock.js';
import { createAuthServices, type AuthDeps } from './services.js';
import { adminRoutes } from './admin.js';
import { callbackRoutes, keyRoutes } from './routes.js';
import type { SessionChecker } from './sessions.js';
import { settings } from './settings.js';
import { hostedPlugin } from './hosted/plugin.js';
import type { Commands } from '../core/cli-commands.js';
import { authCommands } from './cli.js';
import { passkeyRoutes } from './passkeys/routes.js';
import { twoFactorRoutes } from './two-factor/routes.js';
import { twoFactorAdminRoutes } from './two-factor/admin.js';
import { magicLinkRoutes } from './magic-links/routes.js';
import { adminUserRoutes, userRoutes } from './users/routes.js';
import { jwtAdminRoutes, jwtRoutes } from './jwt/routes.js';

export type { AuthDeps } from './services.js';
export type { SendSystemMail, SystemMessage } from './codes.js';
export type { Limiter } from './limiter.js';
export type { SessionChecker, SessionInfo } from './sessions.js';

export interface Auth {
  /** For the public listener. */
  plugin: FastifyPluginAsync;
  /** For the admin listener (behind its token guard). */
  admin: FastifyPluginAsync;
  /** Sessions of tokens, for the public gRPC CheckSession. */
  sessions: SessionChecker;
  /** The auth area's CLI commands. */
  commands: Commands;
}

/**
 * Builds the auth capability; `plugin` and `admin` share one context (one session cache, one set
 * of limits). Without deps, for the CLI (a process that calls the running control's admin API and
 * opens no store), only the commands.
 */
export function createAuth(): Pick<Auth, 'commands'>;
export function createAuth(deps: AuthDeps): Auth;
export function createAuth(deps?: AuthDeps): Auth | Pick<Auth, 'commands'> {
  if (!deps) return { commands: authCommands() };
  const ctx = createAuthServices(deps);
  const plugin: FastifyPluginAsync = async (app) => {
    await app.register(hostedPlugin(ctx)); // first: its browser-origin hooks reach the key routes
    await app.register(keyRoutes(ctx, deps.fastLane));
    await app.register(callbackRoutes(ctx));
    await app.register(passkeyRoutes(ctx));
    await app.register(twoFactorRoutes(ctx, ctx.twoFactor));
    await app.register(magicLinkRoutes(ctx, ctx.magicLinks));
    await app.register(userRoutes(ctx, ctx.users));
    await app.register(jwtRoutes(ctx));
    // The audit log's retention too: at start (a node that was down past it) and with the rest.
    const pruneAudit = () => ctx.events.prune(deps.config.auth.auditRetentionDays).catch((err: unknown) => deps.log.warn({ err }, 'audit prune failed'));
    void pruneAudit();
    const prune = setInterval(() => {
      ctx.store.prune(clock.now()).catch((err: unknown) => deps.log.warn({ err }, 'auth prune failed'));
      void pruneAudit();
    }, settings.pruneEveryMs);
    prune.unref();
    app.addHook('onClose', async () => clearInterval(prune));
  };
  const admin: FastifyPluginAsync = async (app) => {
    await app.register(adminRoutes(ctx));
    await app.register(twoFactorAdminRoutes(ctx, ctx.twoFactor));
    await app.register(adminUserRoutes(ctx, ctx.users));
    await app.register(jwtAdminRoutes(ctx));
  };
  return { plugin, admin, sessions: ctx.sessions, commands: authCommands() };
}
