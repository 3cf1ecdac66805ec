// The hosted widget's passkey sign-in (no key, as the other hosted calls): options for the widget's page (its
// iframe runs on postgate's origin, so that is the ceremony's origin and its host the RP ID unless a parent
// domain is named), and the check of the assertion, which answers the app's callback address with a
// single-use svc_code: the app exchanges it at /exchange-code, where the sign-in gates run.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { ApiError } from '../../core/errors.js';
import type { AuthServices } from '../services.js';
import { connectionIp, regionAllows } from '../region.js';
import { settings } from '../settings.js';
import { type Hosted, withCode } from '../hosted/project.js';
import { errors } from '../hosted/schemas.js';
import { PROVIDER } from './service.js';
import { passkeySchemas } from './schemas.js';
import { ceremonyOrigin } from './routes.js';

const P = '/api/v1/auth';
const tags = ['auth'];

/** True when the project turned passkeys on and the user's region may use them (the widget shows its button and autofill then). */
export async function passkeysEnabled(ctx: AuthServices, projectId: string, ip: string): Promise<boolean> {
  const cfg = await ctx.projects.provider(projectId, PROVIDER);
  return Boolean(cfg?.methods.includes('webauthn') && regionAllows(cfg.region, ip));
}

export const hostedPasskeyRoutes =
  (ctx: AuthServices, hosted: Hosted): FastifyPluginAsync =>
  async (app) => {
    /** The widget's page origin: postgate's own (or one the project allows, for an app calling these itself). */
    async function widgetOrigin(req: FastifyRequest, projectId: string): Promise<string> {
      const o = ceremonyOrigin(req, undefined);
      if (!(await hosted.originAllowed(projectId, o))) throw new ApiError('REDIRECT_NOT_ALLOWED', `The origin ${o} is not allowed for this project`);
      return o;
    }

    app.post<{ Body: { slug: string; rpId?: string; redirectUri?: string } }>(
      `${P}/hosted/passkey/options`,
      {
        schema: {
          summary: 'Hosted widget: options to sign in with a passkey (public; discoverable credentials, autofill)',
          tags,
          body: passkeySchemas.hostedOptions.body,
          response: { ...passkeySchemas.hostedOptions.response, ...errors },
        },
      },
      async (req) => {
        ctx.keyless.ip(req, 'hosted-passkey-options');
        const project = await hosted.project(req.body.slug);
        await hosted.requireRequestOrigin(req, project.id);
        ctx.keyless.project('hosted-passkey-options', project.id);
        await hosted.enabled(req, project.id, PROVIDER, 'webauthn');
        if (req.body.redirectUri !== undefined) await ctx.oauth.checkCallbackUrl(project.id, req.body.redirectUri);
        const origin = await widgetOrigin(req, project.id);
        return ctx.passkeys.authenticationOptions(
          { projectId: project.id, env: 'live' },
          { origin, ...(req.body.rpId !== undefined ? { rpId: req.body.rpId } : {}) },
        );
      },
    );

    app.post<{ Body: { slug: string; response: AuthenticationResponseJSON; redirectUri: string; codeChallenge?: string } }>(
      `${P}/hosted/passkey/verify`,
      {
        schema: {
          summary: 'Hosted widget: check a passkey sign-in (public); answers the redirect address with a single-use svc_code',
          tags,
          body: passkeySchemas.hostedVerify.body,
          response: { ...passkeySchemas.hostedVerify.response, ...errors, 401: errors[400] },
        },
      },
      async (req) => {
        ctx.keyless.ip(req, 'hosted-passkey-verify');
        const project = await hosted.project(req.body.slug);
        await hosted.requireRequestOrigin(req, project.id);
        ctx.keyless.project('hosted-passkey-verify', project.id);
        const back = await ctx.oauth.checkCallbackUrl(project.id, req.body.redirectUri);
        const clientChallenge = await ctx.oauth.checkChallenge(project.id, req.body.codeChallenge);
        const origin = { ip: connectionIp(req), userAgent: req.headers['user-agent'] ?? null };
        const scope = { projectId: project.id, env: 'live' as const };
        const code = await ctx.events.watch(scope, { provider: PROVIDER }, origin, async () => {
          await hosted.enabled(req, project.id, PROVIDER, 'webauthn');
          // The widget's frame sits in an app's page: that page must be one of the project's allowed origins.
          const { passkey, userVerified } = await ctx.passkeys.authenticate(scope, req.body.response, await widgetOrigin(req, project.id), (top) =>
            ctx.store.hasOrigin(project.id, top),
          );
          return ctx.passkeys.exchangeCode(scope, passkey.userId, origin, settings.exchangeCodeTtlMs, clientChallenge, userVerified);
        });
        return { redirectUrl: withCode(back, code) };
      },
    );
  };
