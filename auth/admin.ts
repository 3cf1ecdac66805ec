// The auth area's admin API (behind the CLI): providers, allowed origins, exact callback URLs and
// settings of a project, under /admin/v1/projects/:slug/auth/. Hidden from the
// public OpenAPI document.
import type { FastifyPluginAsync } from 'fastify';
import { invalid, notFound } from '../core/errors.js';
import { clock } from '../core/clock.js';
import type { Project } from '../control/store/index.js';
import type { AuthServices } from './services.js';
import { defaultJwtAudience, normalizeCallbackUrl, normalizeOrigin, type EffectiveSettings, type ProviderInput, type SettingsInput } from './project-config.js';
import { endpointNames } from './providers/types.js';

const slug = { type: 'string', pattern: '^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$' } as const;
const slugParams = { type: 'object', required: ['slug'], properties: { slug } } as const;
const providerParams = { type: 'object', required: ['slug', 'provider'], properties: { slug, provider: { type: 'string', maxLength: 32 } } } as const;
const list = { type: 'array', maxItems: 500, items: { type: 'string', maxLength: 64 } } as const;
const hide = { hide: true, tags: ['admin'] };

const providerBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    clientId: { type: 'string', maxLength: 512 },
    clientSecret: { type: 'string', maxLength: 4096 },
    botToken: { type: 'string', maxLength: 512 },
    methods: { type: 'array', maxItems: 10, items: { type: 'string', maxLength: 32 } },
    ...Object.fromEntries(endpointNames.map((n) => [n, { type: 'string', maxLength: 2048 }])),
    allowCountries: list,
    denyCountries: list,
    allowCidrs: list,
    denyCidrs: list,
  },
} as const;

export const adminRoutes =
  (ctx: AuthServices): FastifyPluginAsync =>
  async (app) => {
    const { projects, store } = ctx;
    const base = '/admin/v1/projects/:slug/auth';

    const project = async (s: string): Promise<Project> => {
      const p = await ctx.projectsStore.projects.bySlug(s);
      if (!p) throw notFound(`No project ${s}`);
      return p;
    };

    app.get<{ Params: { slug: string } }>(`${base}/providers`, { schema: { ...hide, params: slugParams } }, async (req) => ({
      data: await projects.list((await project(req.params.slug)).id),
    }));

    app.put<{ Params: { slug: string; provider: string }; Body: ProviderInput }>(
      `${base}/providers/:provider`,
      {
        schema: { ...hide, params: providerParams, body: providerBody },
      },
      async (req) => projects.set((await project(req.params.slug)).id, req.params.provider, req.body),
    );

    app.delete<{ Params: { slug: string; provider: string } }>(`${base}/providers/:provider`, { schema: { ...hide, params: providerParams } }, async (req) =>
      projects.disable((await project(req.params.slug)).id, req.params.provider),
    );

    app.get<{ Params: { slug: string } }>(`${base}/origins`, { schema: { ...hide, params: slugParams } }, async (req) => ({
      data: await store.origins((await project(req.params.slug)).id),
    }));

    const originBody = {
      type: 'object',
      additionalProperties: false,
      required: ['origin'],
      properties: { origin: { type: 'string', maxLength: 2048 } },
    } as const;

    app.post<{ Params: { slug: string }; Body: { origin: string } }>(
      `${base}/origins`,
      { schema: { ...hide, params: slugParams, body: originBody } },
      async (req, reply) => {
        const origin = normalizeOrigin(req.body.origin);
        await store.addOrigin((await project(req.params.slug)).id, origin, clock.now());
        return reply.code(201).send({ origin });
      },
    );

    app.delete<{ Params: { slug: string }; Body: { origin: string } }>(
      `${base}/origins`,
      { schema: { ...hide, params: slugParams, body: originBody } },
      async (req) => {
        const origin = normalizeOrigin(req.body.origin);
        if (!(await store.removeOrigin((await project(req.params.slug)).id, origin))) throw notFound(`${origin} is not allowed for this project`);
        return { origin, removed: true };
      },
    );

    app.get<{ Params: { slug: string } }>(`${base}/callbacks`, { schema: { ...hide, params: slugParams } }, async (req) => ({
      data: await store.callbackUrls((await project(req.params.slug)).id),
    }));

    const callbackBody = { type: 'object', additionalProperties: false, required: ['url'], properties: { url: { type: 'string', maxLength: 2048 } } } as const;

    // Exact callback URLs: once a project has one, sign-ins return only to those (their origins must be allowed too).
    app.post<{ Params: { slug: string }; Body: { url: string } }>(
      `${base}/callbacks`,
      { schema: { ...hide, params: slugParams, body: callbackBody } },
      async (req, reply) => {
        const url = normalizeCallbackUrl(req.body.url);
        const p = await project(req.params.slug);
        if (!(await store.hasOrigin(p.id, new URL(url).origin))) throw invalid(`Allow its origin first: postgate origin allow ${new URL(url).origin}`);
        await store.addCallbackUrl(p.id, url, clock.now());
        return reply.code(201).send({ url });
      },
    );

    app.delete<{ Params: { slug: string }; Body: { url: string } }>(
      `${base}/callbacks`,
      { schema: { ...hide, params: slugParams, body: callbackBody } },
      async (req) => {
        const url = normalizeCallbackUrl(req.body.url);
        if (!(await store.removeCallbackUrl((await project(req.params.slug)).id, url)))
          throw notFound(`${url} is not a registered callback URL of this project`);
        return { url, removed: true };
      },
    );

    const settingsOut = (s: EffectiveSettings, slug: string) => ({
      sessionTtlSeconds: s.sessionTtlMs / 1000,
      codeFrom: s.codeFrom,
      telegramWindowSeconds: s.telegramWindowMs / 1000,
      requireCodeVerifier: s.requireCodeVerifier,
      twoFactor: s.twoFactor,
      jwtAudience: s.jwtAudience ?? defaultJwtAudience(slug),
      jwtTtlSeconds: s.jwtTtlMs / 1000,
    });

    app.get<{ Params: { slug: string } }>(`${base}/settings`, { schema: { ...hide, params: slugParams } }, async (req) => {
      const p = await project(req.params.slug);
      return settingsOut(await projects.settings(p.id), p.slug);
    });

    app.patch<{ Params: { slug: string }; Body: SettingsInput }>(
      `${base}/settings`,
      {
        schema: {
          ...hide,
          params: slugParams,
          body: {
            type: 'object',
            additionalProperties: false,
            properties: {
              sessionTtlSeconds: { type: ['integer', 'null'], minimum: 60, maximum: 365 * 86400 },
              codeFrom: { type: ['string', 'null'], maxLength: 320 },
              telegramWindowSeconds: { type: ['integer', 'null'], minimum: 30, maximum: 86400 },
              requireCodeVerifier: { type: ['boolean', 'null'] },
              twoFactor: { type: ['string', 'null'], enum: ['off', 'optional', 'required', null] },
              jwtAudience: { type: ['string', 'null'], minLength: 1, maxLength: 256 },
              jwtTtlSeconds: { type: ['integer', 'null'], minimum: 30, maximum: 600 },
            },
          },
        },
      },
      async (req) => {
        const p = await project(req.params.slug);
        await projects.putSettings(p.id, req.body);
        return settingsOut(await projects.settings(p.id), p.slug);
      },
    );
  };
