// Two-factor routes under /api/v1/auth/two-factor, with a project key as every key route: finishing a
// sign-in held for its second factor (its pendingToken and a code), enrolling under it when the project
// requires a factor the user has not got, and a signed-in user's own factors (Authorization: Bearer).
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ApiError } from '../../core/errors.js';
import { bearerOf } from '../../control/api-keys/credentials.js';
import type { Origin } from '../../control/store/index.js';
import type { AuthServices } from '../services.js';
import { AUTH_KEYS } from '../routes.js';
import { clientIp } from '../region.js';
import { answerSignIn, clientIpHeader, errors, serviceKey, serviceKeyAndSession } from '../schemas.js';
import { scopeOf, type SessionInfo } from '../sessions.js';
import { settings } from '../settings.js';
import type { FactorMethod, TwoFactorService } from './service.js';
import { schemas } from './schemas.js';

const P = '/api/v1/auth/two-factor';
const tags = ['auth'];

export const twoFactorRoutes =
  (ctx: AuthServices, service: TwoFactorService): FastifyPluginAsync =>
  async (app) => {
    app.decorateRequest('caller', undefined);
    app.addHook('onRequest', ctx.access.hook(AUTH_KEYS));
    const prune = setInterval(() => {
      service.prune().catch((err: unknown) => ctx.log.warn({ err }, 'two-factor prune failed'));
    }, settings.pruneEveryMs);
    prune.unref();
    app.addHook('onClose', async () => clearInterval(prune));

    const originOf = (req: FastifyRequest): Origin & { ip: string } => ({ ip: clientIp(req, req.caller!), userAgent: req.headers['user-agent'] ?? null });
    const scope = (req: FastifyRequest) => scopeOf(req.caller!);
    /** A sign-in step: its refusals are recorded as sign_in.failed. */
    const attempt = <T>(req: FastifyRequest, step: () => Promise<T>): Promise<T> => ctx.events.watch(scope(req), {}, originOf(req), step);

    /** The signed-in user of the Bearer token, when the project has second factors on. */
    const signedIn = async (req: FastifyRequest): Promise<SessionInfo & { mode: 'optional' | 'required' }> => {
      const info = await ctx.sessions.check(req.caller!, bearerOf(req.headers));
      const mode = await service.mode(req.caller!.project.id);
      if (mode === 'off') throw new ApiError('PROVIDER_NOT_ENABLED', 'Two-factor is not enabled for this project');
      return { ...info, mode };
    };

    app.post<{ Body: { pendingToken: string; code: string; method?: FactorMethod } }>(
      `${P}/verify`,
      {
        schema: {
          summary: 'Finish a sign-in held for its second factor (401 TWO_FACTOR_REQUIRED): its pendingToken and a TOTP or backup code → the session',
          tags,
          security: serviceKey,
          headers: clientIpHeader,
          body: schemas.verify.body,
          response: { ...errors, ...schemas.verify.response },
        },
      },
      async (req) => {
        const s = await attempt(req, () => service.verify(scope(req), req.body.pendingToken, req.body.code, req.body.method, originOf(req)));
        return answerSignIn(s);
      },
    );

    app.post<{ Body: { pendingToken: string } }>(
      `${P}/enrol`,
      {
        schema: {
          summary: 'The project requires a second factor and the user held (enrol: true) has none: a new authenticator-app secret, its otpauth URI and QR code',
          tags,
          security: serviceKey,
          headers: clientIpHeader,
          body: schemas.enrol.body,
          response: { ...schemas.enrol.response, ...errors },
        },
      },
      async (req) => attempt(req, () => service.enrolStart(scope(req), req.body.pendingToken, req.caller!.project.name)),
    );

    app.post<{ Body: { pendingToken: string; code: string } }>(
      `${P}/enrol/confirm`,
      {
        schema: {
          summary: "The enrolled app's first code: two-factor is on, the held sign-in gets its session, and the backup codes are shown (once)",
          tags,
          security: serviceKey,
          headers: clientIpHeader,
          body: schemas.enrolConfirm.body,
          response: { ...errors, ...schemas.enrolConfirm.response },
        },
      },
      async (req) => {
        const { opened, backupCodes } = await attempt(req, () => service.enrolConfirm(scope(req), req.body.pendingToken, req.body.code, originOf(req)));
        return { ...answerSignIn(opened), backupCodes };
      },
    );

    app.get(
      P,
      {
        schema: {
          summary: "The signed-in user's second factors: an authenticator app on or not, backup codes left",
          tags,
          security: serviceKeyAndSession,
          response: { ...schemas.status.response, ...errors },
        },
      },
      async (req) => {
        const { user, mode } = await signedIn(req);
        const st = await service.status(user.id);
        return {
          mode,
          totp: st.totp,
          confirmedAt: st.confirmedAt === null ? null : new Date(st.confirmedAt).toISOString(),
          backupCodesLeft: st.backupCodesLeft,
        };
      },
    );

    app.post(
      `${P}/totp/setup`,
      {
        schema: {
          summary: 'Start enrolling an authenticator app: its secret, otpauth URI and QR code (off until confirmed with a first code)',
          tags,
          security: serviceKeyAndSession,
          response: { ...schemas.setup.response, ...errors },
        },
      },
      async (req) => {
        const { user } = await signedIn(req);
        return service.totpSetup(user, req.caller!.project.name);
      },
    );

    app.post<{ Body: { code: string } }>(
      `${P}/totp/confirm`,
      {
        schema: {
          summary: "The new app's first code: two-factor is on; answers the backup codes (shown once)",
          tags,
          security: serviceKeyAndSession,
          headers: clientIpHeader,
          body: schemas.confirm.body,
          response: { ...schemas.confirm.response, ...errors },
        },
      },
      async (req) => {
        const { user, session } = await signedIn(req);
        return { backupCodes: await service.totpConfirm(scope(req), user, session.id, req.body.code, originOf(req)) };
      },
    );

    app.post<{ Body: { code: string } }>(
      `${P}/backup-codes`,
      {
        schema: {
          summary: 'New backup codes against a current code (the old ones stop working); shown once',
          tags,
          security: serviceKeyAndSession,
          headers: clientIpHeader,
          body: schemas.backupCodes.body,
          response: { ...schemas.backupCodes.response, ...errors },
        },
      },
      async (req) => {
        const { user } = await signedIn(req);
        return { backupCodes: await service.regenerateBackupCodes(scope(req), user, req.body.code, originOf(req)) };
      },
    );

    const disable = async (req: FastifyRequest<{ Body: { code: string } }>) => {
      const { user, session } = await signedIn(req);
      await service.disable(scope(req), user, session.id, req.body.code, originOf(req));
      return { success: true };
    };
    const disableSchema = (summary: string) => ({
      schema: {
        summary,
        tags,
        security: serviceKeyAndSession,
        headers: clientIpHeader,
        body: schemas.disable.body,
        response: { ...schemas.disable.response, ...errors },
      },
    });
    app.delete<{ Body: { code: string } }>(P, disableSchema('Turn two-factor off against a current code (refused when the project requires it)'), disable);
    // Browsers' preflight allows GET and POST only (auth/hosted/cors.ts): the SDK's way to the same.
    app.post<{ Body: { code: string } }>(`${P}/disable`, disableSchema('The same as DELETE /two-factor, as a POST (browsers)'), disable);
  };
