// The hosted widget's public endpoints (no key): hosted-config, hosted-start,
// the email-code pair under /hosted/, the widget page and its files, and the
// embed script. Each is scoped by the project's slug and its allowed origins,
// and each sign-in ends the same way as OAuth: the top window lands on the
// app's callback with a single-use svc_code that the app exchanges.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, invalid } from '../../core/errors.js';
import { isAddress } from '../../common/address.js';
import { marks } from '../sdk/src/marks.js';
import type { AuthServices } from '../services.js';
import { connectionIp, regionAllows } from '../region.js';
import { settings } from '../settings.js';
import { providers } from '../providers/index.js';
import { assets, type Asset } from './assets.js';
import { pickLang, type Key } from './i18n.js';
import { renderPage, type WidgetConfig, type WidgetProvider } from './page.js';
import { type Hosted, withCode } from './project.js';
import { errors, schemas, tags } from './schemas.js';
import { hostedPasskeyRoutes, passkeysEnabled } from '../passkeys/hosted.js';

const P = '/api/v1/auth';
const CODE_LENGTH = 6;
const resendAfterSeconds = Math.ceil(settings.codeResendCooldownMs / 1000);

function emailOf(input: string): string {
  const e = input.trim().toLowerCase();
  if (!isAddress(e)) throw invalid('email is not a valid address');
  return e;
}

/** What the widget may offer: redirect providers with oauth enabled, and the email code form. Filtered by the user's region. */
async function widgetProviders(ctx: AuthServices, req: FastifyRequest, projectId: string): Promise<WidgetProvider[]> {
  const ip = connectionIp(req);
  const out: WidgetProvider[] = [];
  for (const cfg of await ctx.projects.enabled(projectId)) {
    if (!regionAllows(cfg.region, ip)) continue;
    const def = providers.get(cfg.id)!;
    const methods: WidgetProvider['methods'] = [];
    if (def.oauth && cfg.methods.includes('oauth')) methods.push('oauth');
    if (cfg.id === 'email' && cfg.methods.includes('otp')) methods.push('otp');
    if (cfg.id === 'email' && cfg.methods.includes('magic_link')) methods.push('magic_link'); // magic-links
    if (!methods.length) continue;
    const mark = marks[cfg.id];
    out.push({ id: cfg.id, name: mark?.name ?? def.name, ...(mark?.nameRu ? { nameRu: mark.nameRu } : {}), methods });
  }
  return out;
}

function sendAsset(reply: FastifyReply, a: Asset, maxAge: number) {
  return reply
    .type(a.type)
    .header('cache-control', `public, max-age=${maxAge}`)
    .header('x-content-type-options', 'nosniff')
    .header('cross-origin-resource-policy', 'cross-origin')
    .send(a.body);
}

export const hostedRoutes =
  (ctx: AuthServices, hosted: Hosted): FastifyPluginAsync =>
  async (app) => {
    app.get<{ Params: { slug: string } }>(
      `${P}/hosted-config/:slug`,
      {
        schema: {
          summary: "Hosted widget: the project's display name, logo, and the providers and methods the widget may show (public)",
          tags,
          params: schemas.config.params,
          response: { ...schemas.config.response, ...errors },
        },
      },
      async (req) => {
        ctx.keyless.ip(req, 'hosted-config');
        const project = await hosted.project(req.params.slug);
        await hosted.checkRequestOrigin(req, project.id);
        ctx.keyless.project('hosted-config', project.id);
        return {
          slug: project.slug,
          name: project.name,
          logoUrl: null,
          providers: await widgetProviders(ctx, req, project.id),
          codeLength: CODE_LENGTH,
          codeTtlSeconds: Math.round(settings.codeTtlMs / 1000),
          resendAfterSeconds,
        };
      },
    );

    app.post<{ Body: { slug: string; provider: string; method?: 'oauth'; redirectUri: string; codeChallenge?: string } }>(
      `${P}/hosted-start`,
      {
        schema: {
          summary: 'Hosted widget: start an OAuth sign-in for a project (public); answers the provider address for the top window',
          tags,
          body: schemas.start.body,
          response: { ...schemas.start.response, ...errors },
        },
      },
      async (req) => {
        ctx.keyless.ip(req, 'hosted-start');
        const { slug, provider, redirectUri } = req.body;
        const project = await hosted.project(slug);
        await hosted.requireRequestOrigin(req, project.id);
        ctx.keyless.project('hosted-start', project.id);
        const def = providers.get(provider);
        if (!def?.oauth) throw new ApiError('PROVIDER_NOT_ENABLED', `${provider} has no OAuth sign-in`);
        const cfg = await hosted.enabled(req, project.id, provider, 'oauth');
        return { url: await ctx.oauth.start(hosted.caller(project), def, cfg, redirectUri, req.body.codeChallenge) };
      },
    );

    app.post<{ Body: { slug: string; email: string; redirectUri: string } }>(
      `${P}/hosted/email-otp/send`,
      {
        schema: {
          summary: 'Hosted widget: email a 6-digit sign-in code (public; the redirect address must be allowed)',
          tags,
          body: schemas.send.body,
          response: { ...schemas.send.response, ...errors },
        },
      },
      async (req) => {
        ctx.keyless.ip(req, 'hosted-email-send');
        const project = await hosted.project(req.body.slug);
        await hosted.requireRequestOrigin(req, project.id);
        ctx.keyless.project('hosted-email-send', project.id);
        await ctx.oauth.checkCallbackUrl(project.id, req.body.redirectUri);
        const to = emailOf(req.body.email);
        const cfg = await hosted.enabled(req, project.id, 'email', 'otp');
        const { codeFrom } = await ctx.projects.settings(project.id);
        await ctx.codes.send(hosted.caller(project), 'email', to, connectionIp(req), cfg, codeFrom);
        return { success: true, message: 'If the address can receive it, a sign-in code is on its way', resendAfterSeconds };
      },
    );

    app.post<{ Body: { slug: string; email: string; code: string; redirectUri: string; codeChallenge?: string } }>(
      `${P}/hosted/email-otp/verify`,
      {
        schema: {
          summary: 'Hosted widget: check an email code (public); answers the redirect address with a single-use svc_code',
          tags,
          body: schemas.verify.body,
          response: { ...schemas.verify.response, ...errors },
        },
      },
      async (req) => {
        ctx.keyless.ip(req, 'hosted-email-verify');
        const project = await hosted.project(req.body.slug);
        await hosted.requireRequestOrigin(req, project.id);
        ctx.keyless.project('hosted-email-verify', project.id);
        const back = await ctx.oauth.checkCallbackUrl(project.id, req.body.redirectUri);
        const clientChallenge = await ctx.oauth.checkChallenge(project.id, req.body.codeChallenge);
        const address = emailOf(req.body.email);
        const ip = connectionIp(req);
        const origin = { ip, userAgent: req.headers['user-agent'] ?? null };
        const scope = { projectId: project.id, env: 'live' as const };
        await ctx.events.watch(scope, { email: address, provider: 'email' }, origin, async () => {
          await hosted.enabled(req, project.id, 'email', 'otp');
          await ctx.codes.verify(hosted.caller(project), 'email', address, req.body.code, ip);
        });
        const code = await ctx.sessions.openLater(
          scope,
          { provider: 'email', subject: address, email: address, emailVerified: true, name: null, avatarUrl: null, phone: null, username: null },
          origin,
          clientChallenge,
        );
        return { redirectUrl: withCode(back, code) };
      },
    );

    app.get<{ Querystring: { slug: string; redirect_uri: string; origin?: string; lang?: 'en' | 'ru'; code_challenge?: string } }>(
      `${P}/hosted/widget`,
      {
        schema: {
          summary: "Hosted widget: the sign-in form the embed script frames (HTML; CSP frame-ancestors = the project's allowed origins)",
          tags,
          querystring: schemas.widget.querystring,
          response: schemas.widget.response,
        },
      },
      async (req, reply) => {
        ctx.keyless.ip(req, 'hosted-widget');
        const q = req.query;
        const lang = pickLang(q.lang, req.headers['accept-language']);
        const a = await assets();
        const project = await ctx.projectsStore.projects.bySlug(q.slug);
        if (project) ctx.keyless.project('hosted-widget', project.id);
        const origins = project ? await hosted.originsOf(project.id) : [];
        let error: Key | undefined;
        if (!project) error = 'errNotFound';
        else if (q.origin !== undefined && !origins.includes(q.origin)) error = 'errRedirect';
        else {
          try {
            await ctx.oauth.checkCallbackUrl(project.id, q.redirect_uri);
          } catch {
            error = 'errRedirect';
          }
        }
        const config: WidgetConfig = {
          slug: q.slug,
          name: project?.name ?? 'postgate',
          lang,
          redirectUri: q.redirect_uri,
          codeChallenge: q.code_challenge ?? null,
          parentOrigin: error ? null : (q.origin ?? null),
          providers: project && !error ? await widgetProviders(ctx, req, project.id) : [],
          email: false,
          codeLength: CODE_LENGTH,
          resendAfterSeconds,
          passkeys: Boolean(project && !error && (await passkeysEnabled(ctx, project.id, connectionIp(req)))),
          magicLink: false,
        };
        config.email = config.providers.some((p) => p.methods.includes('otp'));
        config.magicLink = config.providers.some((p) => p.methods.includes('magic_link'));
        // Only the project's allowed origins may frame the form; nothing at all when there are none (or no project).
        const ancestors = origins.length ? origins.join(' ') : "'none'";
        const csp = [
          "default-src 'none'",
          "script-src 'self'",
          "style-src 'self'",
          "img-src 'self' data: https:",
          "connect-src 'self'",
          "form-action 'none'",
          "base-uri 'none'",
          `frame-ancestors ${ancestors}`,
        ].join('; ');
        return reply
          .code(!project ? 404 : error ? 400 : 200)
          .type('text/html; charset=utf-8')
          .header('content-security-policy', csp)
          .header('cache-control', 'no-store')
          .header('x-content-type-options', 'nosniff')
          .header('referrer-policy', 'no-referrer')
          .send(renderPage({ config, logoUrl: null, ...(error ? { error } : {}), assets: { css: a.css.hash, js: a.widget.hash } }));
      },
    );

    await app.register(hostedPasskeyRoutes(ctx, hosted));

    // The files name no project: counted per address only.
    app.get(
      `${P}/hosted/widget.js`,
      { schema: { summary: "Hosted widget: the form's script", tags, response: schemas.script.response } },
      async (req, reply) => {
        ctx.keyless.ip(req, 'hosted-asset');
        return sendAsset(reply, (await assets()).widget, 86400);
      },
    );
    app.get(
      `${P}/hosted/widget.css`,
      { schema: { summary: "Hosted widget: the form's stylesheet", tags, response: schemas.stylesheet.response } },
      async (req, reply) => {
        ctx.keyless.ip(req, 'hosted-asset');
        return sendAsset(reply, (await assets()).css, 86400);
      },
    );
    // Apps embed this address, so it is cached briefly: a new version reaches them within minutes.
    app.get(
      '/embed/v1.js',
      {
        schema: {
          summary: 'The embed script: <script src="{id_url}/embed/v1.js" data-slug data-redirect-uri data-id-host> shows the sign-in form in an iframe',
          tags,
          response: schemas.script.response,
        },
      },
      async (req, reply) => {
        ctx.keyless.ip(req, 'embed');
        return sendAsset(reply, (await assets()).embed, 300);
      },
    );
  };
