// The passkey routes under /api/v1/auth (a project key, as the other auth routes): a signed-in user
// (Authorization: Bearer <session token>) registers, lists and removes passkeys; anyone signs in with one.
// Registering and signing in need the project's `passkey` provider (off until enabled); listing and removing
// do not, so a project that turned passkeys off still lets users clean up.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { ApiError, invalid } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import { bearerOf } from '../../control/api-keys/credentials.js';
import type { Origin } from '../../control/store/index.js';
import { AUTH_KEYS } from '../routes.js';
import type { AuthServices } from '../services.js';
import { scopeOf } from '../sessions.js';
import { addressKey } from '../keyless.js';
import { clientIp, regionAllows } from '../region.js';
import { durations, settings } from '../settings.js';
import { answerSignIn, clientIpHeader, errors, pendingErrorSchema, schemas, serviceKey, serviceKeyAndSession } from '../schemas.js';
import { PROVIDER, viewOf } from './service.js';
import { passkeySchemas } from './schemas.js';

const P = '/api/v1/auth';
const tags = ['auth'];

/**
 * The ceremony's origin: the browser's Origin header, or (a server calling for a browser) the body's `origin`;
 * when both are given they must agree.
 */
export function ceremonyOrigin(req: FastifyRequest, given: string | undefined): string {
  const header = typeof req.headers.origin === 'string' ? req.headers.origin : undefined;
  if (header !== undefined && given !== undefined && header !== given) throw invalid('origin does not match the Origin header');
  const o = header ?? given;
  if (!o) throw invalid('The page origin is required: call from a browser (Origin header) or give origin');
  let url: URL;
  try {
    url = new URL(o);
  } catch {
    throw invalid('origin is not a URL origin');
  }
  if (url.origin !== o) throw invalid('origin must be an origin (scheme://host[:port]), nothing more');
  return o;
}

export const passkeyRoutes =
  (ctx: AuthServices): FastifyPluginAsync =>
  async (app) => {
    const { access, projects, sessions, events, store, passkeys, limiter } = ctx;
    app.decorateRequest('caller', undefined);
    app.addHook('onRequest', access.hook(AUTH_KEYS));

    const originOf = (req: FastifyRequest): Origin => ({ ip: clientIp(req, req.caller!), userAgent: req.headers['user-agent'] ?? null });

    /** Registering and signing in need the project's passkey provider, in the user's region. */
    async function enabled(req: FastifyRequest): Promise<void> {
      const cfg = await projects.provider(req.caller!.project.id, PROVIDER);
      if (!cfg?.methods.includes('webauthn')) throw new ApiError('PROVIDER_NOT_ENABLED', 'Passkeys are not enabled for this project');
      if (!regionAllows(cfg.region, clientIp(req, req.caller!))) throw new ApiError('REGION_NOT_ALLOWED', 'Passkeys are not available in your region');
    }

    /** The page's origin, which must be one of the project's allowed origins. */
    async function allowedOrigin(req: FastifyRequest, given: string | undefined): Promise<string> {
      const o = ceremonyOrigin(req, given);
      if (!(await store.hasOrigin(req.caller!.project.id, o)))
        throw new ApiError('REDIRECT_NOT_ALLOWED', `The origin ${o} is not allowed for this project (allow it with: postgate origin allow ${o})`);
      return o;
    }

    /** Sign-in calls per client address and project, as the code checks are counted. */
    const limit = (req: FastifyRequest, route: string) =>
      limiter.take(
        `auth:passkey:${route}:${req.caller!.project.id}:${addressKey(clientIp(req, req.caller!))}`,
        ctx.config.auth.keylessPerIpMinute,
        durations.MINUTE,
        (s) => `Too many passkey sign-ins from this address; try again in ${s} s`,
      );

    const signedIn = (req: FastifyRequest) => sessions.check(req.caller!, bearerOf(req.headers));

    // Challenges nobody answered: dropped now and then (a taken one is deleted at once).
    const prune = setInterval(() => {
      passkeys.prune(clock.now()).catch((err: unknown) => ctx.log.warn({ err }, 'passkey challenge prune failed'));
    }, settings.pruneEveryMs);
    prune.unref();
    app.addHook('onClose', async () => clearInterval(prune));

    app.post<{ Body: { rpId?: string; origin?: string } }>(
      `${P}/passkey/register/options`,
      {
        schema: {
          summary: 'Passkeys: options to register a passkey for the signed-in user (navigator.credentials.create)',
          tags,
          security: serviceKeyAndSession,
          headers: clientIpHeader,
          body: passkeySchemas.registerOptions.body,
          response: { ...passkeySchemas.registerOptions.response, ...errors },
        },
      },
      async (req) => {
        const { user } = await signedIn(req);
        await enabled(req);
        const origin = await allowedOrigin(req, req.body?.origin);
        return passkeys.registrationOptions(scopeOf(req.caller!), user, {
          name: req.caller!.project.name,
          origin,
          ...(req.body?.rpId !== undefined ? { rpId: req.body.rpId } : {}),
        });
      },
    );

    app.post<{ Body: { response: RegistrationResponseJSON; name?: string; origin?: string } }>(
      `${P}/passkey/register/verify`,
      {
        schema: {
          summary: "Passkeys: register the browser's new passkey (attestation none) for the signed-in user",
          tags,
          security: serviceKeyAndSession,
          headers: clientIpHeader,
          body: passkeySchemas.registerVerify.body,
          response: { ...passkeySchemas.registerVerify.response, ...errors },
        },
      },
      async (req) => {
        const { user, session } = await signedIn(req);
        await enabled(req);
        const origin = await allowedOrigin(req, req.body.origin);
        const scope = scopeOf(req.caller!);
        const k = await passkeys.register(scope, user, req.body.response, origin, req.body.name);
        await events.account(scope, 'passkey.added', {
          user,
          userId: user.id,
          sessionId: session.id,
          provider: PROVIDER,
          origin: originOf(req),
          details: { passkey_id: k.id, name: k.name, device_type: k.deviceType, backed_up: k.backedUp },
        });
        return viewOf(k);
      },
    );

    app.get(
      `${P}/passkeys`,
      {
        schema: {
          summary: "Passkeys: the signed-in user's passkeys (never their keys)",
          tags,
          security: serviceKeyAndSession,
          response: { ...passkeySchemas.list.response, ...errors },
        },
      },
      async (req) => {
        const { user } = await signedIn(req);
        return { passkeys: await passkeys.listForUser(scopeOf(req.caller!), user.id) };
      },
    );

    app.delete<{ Params: { id: string } }>(
      `${P}/passkeys/:id`,
      {
        schema: {
          summary: "Passkeys: remove one of the signed-in user's passkeys (another's: 404)",
          tags,
          security: serviceKeyAndSession,
          params: passkeySchemas.remove.params,
          response: { ...passkeySchemas.remove.response, ...errors },
        },
      },
      async (req) => {
        const { user, session } = await signedIn(req);
        const scope = scopeOf(req.caller!);
        const k = await passkeys.remove(scope, user.id, req.params.id);
        await events.account(scope, 'passkey.removed', {
          user,
          userId: user.id,
          sessionId: session.id,
          provider: PROVIDER,
          origin: originOf(req),
          details: { passkey_id: k.id, name: k.name },
        });
        return { success: true };
      },
    );

    app.post<{ Body: { rpId?: string; origin?: string } }>(
      `${P}/sign-in/passkey/options`,
      {
        schema: {
          summary: 'Passkeys: options to sign in with a discoverable passkey (navigator.credentials.get, or conditional mediation in an email field)',
          tags,
          security: serviceKey,
          headers: clientIpHeader,
          body: passkeySchemas.signInOptions.body,
          response: { ...passkeySchemas.signInOptions.response, ...errors },
        },
      },
      async (req) => {
        limit(req, 'options');
        await enabled(req);
        const origin = await allowedOrigin(req, req.body?.origin);
        return passkeys.authenticationOptions(scopeOf(req.caller!), { origin, ...(req.body?.rpId !== undefined ? { rpId: req.body.rpId } : {}) });
      },
    );

    app.post<{ Body: { response: AuthenticationResponseJSON; origin?: string } }>(
      `${P}/sign-in/passkey/verify`,
      {
        schema: {
          summary: 'Passkeys: sign in with the assertion of a passkey (single-use challenge; the counter must advance)',
          tags,
          security: serviceKey,
          headers: clientIpHeader,
          body: passkeySchemas.signInVerify.body,
          response: { ...errors, 200: schemas.exchange.response[200], 401: pendingErrorSchema },
        },
      },
      async (req) => {
        limit(req, 'verify');
        const caller = req.caller!;
        const scope = scopeOf(caller);
        const s = await events.watch(scope, { provider: PROVIDER }, originOf(req), async () => {
          await enabled(req);
          const origin = await allowedOrigin(req, req.body.origin);
          const { passkey, userVerified } = await passkeys.authenticate(scope, req.body.response, origin, (top) => store.hasOrigin(caller.project.id, top));
          const { sessionTtlMs } = await projects.settings(caller.project.id);
          // A user-verified passkey is two factors in one (possession and biometrics or PIN).
          return sessions.openFor(scope, passkey.userId, PROVIDER, originOf(req), sessionTtlMs, userVerified);
        });
        return answerSignIn(s, PROVIDER);
      },
    );
  };
