// Magic-link routes: the send with a project key (and the test-only read of a test link), the
// hosted widget's keyless send, and the link itself (no key: the person's browser comes here).
// GET and HEAD of a link only show the confirm page; the page's POST spends it.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ApiError, invalid } from '../../core/errors.js';
import { isAddress } from '../../common/address.js';
import type { Origin } from '../../control/store/index.js';
import type { AuthServices } from '../services.js';
import { AUTH_KEYS } from '../routes.js';
import { clientIp, connectionIp, regionAllows } from '../region.js';
import type { ProviderConfig } from '../providers/types.js';
import { errors as keyErrors, clientIpHeader, serviceKey } from '../schemas.js';
import { errors as hostedErrors } from '../hosted/schemas.js';
import { Hosted } from '../hosted/project.js';
import { assets } from '../hosted/assets.js';
import { pickLang } from '../hosted/i18n.js';
import { settings } from '../settings.js';
import type { MagicLinkService } from './service.js';
import { MAGIC_LINK_PATH } from './service.js';
import { confirmPage, refusalPage } from './page.js';
import { schemas } from './schemas.js';

const P = '/api/v1/auth';
const tags = ['auth'];
const resendAfterSeconds = Math.ceil(settings.codeResendCooldownMs / 1000);
const linkSent = { success: true, message: 'If the address can receive it, a sign-in link is on its way' };

function emailOf(input: string): string {
  const e = input.trim().toLowerCase();
  if (!isAddress(e)) throw invalid('email is not a valid address');
  return e;
}

const refuseDisabled = () => new ApiError('PROVIDER_NOT_ENABLED', 'email with method magic_link is not enabled for this project');

/** Every magic-link route; `service` is ctx.magicLinks. */
export const magicLinkRoutes =
  (ctx: AuthServices, service: MagicLinkService): FastifyPluginAsync =>
  async (app) => {
    await app.register(keyed(ctx, service));
    await app.register(hostedSend(ctx, service));
    await app.register(links(ctx, service));
    const prune = setInterval(() => {
      service.prune().catch((err: unknown) => ctx.log.warn({ err }, 'magic link prune failed'));
    }, settings.pruneEveryMs);
    prune.unref();
    app.addHook('onClose', async () => clearInterval(prune));
  };

/** Routes with a project key (live or test, scope all or auth). */
const keyed =
  (ctx: AuthServices, service: MagicLinkService): FastifyPluginAsync =>
  async (app) => {
    app.decorateRequest('caller', undefined);
    app.addHook('onRequest', ctx.access.hook(AUTH_KEYS));
    const originOf = (req: FastifyRequest): Origin => ({ ip: clientIp(req, req.caller!), userAgent: req.headers['user-agent'] ?? null });

    app.post<{ Body: { email: string; callbackURL: string; codeChallenge?: string } }>(
      `${P}/sign-in/magic-link/send`,
      {
        schema: {
          summary:
            'Email a single-use sign-in link (valid 10 minutes) that returns to callbackURL with svc_code; the same answer whether or not an account exists',
          tags,
          security: serviceKey,
          headers: clientIpHeader,
          body: schemas.send.body,
          response: { ...schemas.send.response, ...keyErrors },
        },
      },
      async (req) => {
        const caller = req.caller!;
        const to = emailOf(req.body.email);
        const ip = clientIp(req, caller);
        const cfg: ProviderConfig | undefined = await ctx.projects.provider(caller.project.id, 'email');
        if (!cfg?.methods.includes('magic_link')) throw refuseDisabled();
        if (!regionAllows(cfg.region, ip)) throw new ApiError('REGION_NOT_ALLOWED', 'email is not available in your region');
        const back = await ctx.oauth.checkCallbackUrl(caller.project.id, req.body.callbackURL);
        const challenge = await ctx.oauth.checkChallenge(caller.project.id, req.body.codeChallenge);
        const { codeFrom } = await ctx.projects.settings(caller.project.id);
        await service.send(caller, to, back, challenge, ip, codeFrom, originOf(req));
        return linkSent;
      },
    );

    app.get<{ Querystring: { email: string } }>(
      `${P}/test/magic-link`,
      {
        schema: {
          summary: 'Test-kind keys only: the current sign-in link of an address (test links are never sent)',
          tags,
          security: serviceKey,
          querystring: schemas.testLink.querystring,
          response: { ...schemas.testLink.response, ...keyErrors },
        },
      },
      async (req) => {
        const caller = req.caller!;
        if (caller.key.kind !== 'test') throw new ApiError('INVALID_API_KEY', 'Only test-kind keys can read sign-in links');
        const r = await service.testLink(caller, emailOf(req.query.email));
        return { url: r.url, expiresAt: new Date(r.expiresAt).toISOString() };
      },
    );
  };

/** The hosted widget's send (no key), guarded as hosted/email-otp/send is. */
const hostedSend =
  (ctx: AuthServices, service: MagicLinkService): FastifyPluginAsync =>
  async (app) => {
    const hosted = new Hosted(ctx);
    app.post<{ Body: { slug: string; email: string; redirectUri: string; codeChallenge?: string } }>(
      `${P}/hosted/magic-link/send`,
      {
        schema: {
          summary: 'Hosted widget: email a single-use sign-in link back to redirectUri (public; the redirect address must be allowed)',
          tags,
          body: schemas.hostedSend.body,
          response: { ...schemas.hostedSend.response, ...hostedErrors },
        },
      },
      async (req) => {
        ctx.keyless.ip(req, 'hosted-magic-link-send');
        const project = await hosted.project(req.body.slug);
        await hosted.requireRequestOrigin(req, project.id);
        ctx.keyless.project('hosted-magic-link-send', project.id);
        const back = await ctx.oauth.checkCallbackUrl(project.id, req.body.redirectUri);
        const to = emailOf(req.body.email);
        await hosted.enabled(req, project.id, 'email', 'magic_link');
        const challenge = await ctx.oauth.checkChallenge(project.id, req.body.codeChallenge);
        const { codeFrom } = await ctx.projects.settings(project.id);
        const ip = connectionIp(req);
        await service.send(hosted.caller(project), to, back, challenge, ip, codeFrom, { ip, userAgent: req.headers['user-agent'] ?? null });
        return { ...linkSent, resendAfterSeconds };
      },
    );
  };

/** The link: GET (and HEAD) show the confirm page; POST spends it and redirects to the app with svc_code. */
const links =
  (ctx: AuthServices, service: MagicLinkService): FastifyPluginAsync =>
  async (app) => {
    // The confirm page's plain form posts urlencoded (empty); the token in the path is all that counts.
    app.addContentTypeParser(['application/x-www-form-urlencoded', 'multipart/form-data'], { parseAs: 'string', bodyLimit: 4096 }, (_req, _body, done) =>
      done(null, {}),
    );
    const path = `${MAGIC_LINK_PATH}/:token`;
    const lang = (req: FastifyRequest) => pickLang(undefined, req.headers['accept-language']);
    const css = async () => (await assets()).css.hash;

    app.get<{ Params: { token: string } }>(
      path,
      {
        schema: {
          summary: 'A magic link: a confirm page whose button signs in (HTML; fetching it spends nothing, so mail scanners cannot)',
          tags,
          params: schemas.link.params,
          produces: ['text/html'],
          response: schemas.link.page,
        },
      },
      async (req, reply) => {
        ctx.keyless.ip(req, 'magic-link');
        const r = await service.peek(req.params.token);
        if (r.status !== 'ok') return refusalPage(reply, lang(req), r.status, await css());
        ctx.keyless.project('magic-link', r.link.projectId);
        const project = await ctx.projectsStore.projects.byId(r.link.projectId);
        if (!project) return refusalPage(reply, lang(req), 'unknown', await css());
        return confirmPage(reply, lang(req), project.name, r.link.email, r.link.callbackUrl, await css());
      },
    );

    app.post<{ Params: { token: string } }>(
      path,
      {
        schema: {
          summary: "A magic link's confirm: spends the link (once) and redirects (303) to the app's callback with a single-use svc_code",
          tags,
          params: schemas.link.params,
          consumes: ['application/x-www-form-urlencoded', 'multipart/form-data'],
          produces: ['text/html'],
          response: schemas.link.confirm,
        },
      },
      async (req, reply) => {
        ctx.keyless.ip(req, 'magic-link');
        const origin = { ip: connectionIp(req), userAgent: req.headers['user-agent'] ?? null };
        const r = await service.take(req.params.token, origin);
        if (r.status !== 'ok') return refusalPage(reply, lang(req), r.status, await css());
        const cfg = await ctx.projects.provider(r.link.projectId, 'email');
        if (!cfg?.methods.includes('magic_link')) return refusalPage(reply, lang(req), 'disabled', await css());
        const target = await service.redirectFor(r.link, origin);
        reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
        return reply.redirect(target, 303);
      },
    );
  };
