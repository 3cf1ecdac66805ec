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
// <passkeys: import>
import { passkeyRoutes } from './passkeys/routes.js';
// </passkeys>
// <two-factor: import>
import { twoFactorRoutes } from './two-factor/routes.js';
import { twoFactorAdminRoutes } from './two-factor/admin.js';
// </two-factor>
// <magic-links: import>
import { magicLinkRoutes } from './magic-links/routes.js';
// </magic-links>
// <users: import>
import { adminUserRoutes, userRoutes } from './users/routes.js';
// </users>
// <signing-keys: import>
import { jwtAdminRoutes, jwtRoutes } from './jwt/routes.js';
// </signing-keys>

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
    // <passkeys: public routes>
    await app.register(passkeyRoutes(ctx));
    // </passkeys>
    // <two-factor: public routes>
    await app.register(twoFactorRoutes(ctx, ctx.twoFactor));
    // </two-factor>
    // <magic-links: public routes>
    await app.register(magicLinkRoutes(ctx, ctx.magicLinks));
    // </magic-links>
    // <users: public routes>
    await app.register(userRoutes(ctx, ctx.users));
    // </users>
    // <signing-keys: public routes>
    await app.register(jwtRoutes(ctx));
    // </signing-keys>
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
    // <passkeys: admin routes>
    // </passkeys>
    // <two-factor: admin routes>
    await app.register(twoFactorAdminRoutes(ctx, ctx.twoFactor));
    // </two-factor>
    // <magic-links: admin routes>
    // </magic-links>
    // <users: admin routes>
    await app.register(adminUserRoutes(ctx, ctx.users));
    // </users>
    // <signing-keys: admin routes>
    await app.register(jwtAdminRoutes(ctx));
    // </signing-keys>
  };
  return { plugin, admin, sessions: ctx.sessions, commands: authCommands() };
}
