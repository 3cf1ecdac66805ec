import type { FastifyPluginAsync } from 'fastify';
import { clock } from '../../core/clock.js';
import { bearerOf } from '../../control/api-keys/credentials.js';
import { AUTH_KEYS } from '../routes.js';
import { errors, serviceKeyAndSession } from '../schemas.js';
import type { AuthServices } from '../services.js';
import { tokenClaims } from './claims.js';
import { OVERLAP_MS, PUBLISH_LEAD_MS } from './keys.js';
import { defaultJwtAudience } from '../project-config.js';

const s = { type: 'string' } as const;
const JWKS_PATHS = ['/.well-known/jwks.json', '/api/v1/auth/jwks.json'];
/** Backends' JWKS caches may keep an answer this long: well inside the publish lead of a new key. */
const JWKS_MAX_AGE_S = 300;

const jwkSchema = {
  type: 'object',
  required: ['kty', 'crv', 'x', 'y', 'kid', 'alg', 'use'],
  // Only these fields are written: a private "d" can never reach the answer, whatever the key object holds.
  properties: { kty: s, crv: s, x: s, y: s, kid: s, alg: s, use: s },
} as const;

const tokenResponse = {
  200: {
    type: 'object',
    required: ['token', 'expiresAt'],
    properties: {
      token: {
        ...s,
        description: 'A JWT (ES256, header kid): iss, sub (user id), aud (the project audience), project, project_id, sid, provider, env, iat, nbf, exp, jti',
      },
      expiresAt: { ...s, format: 'date-time', description: "exp: the project's JWT lifetime (at most 10 minutes), never past the session's expiry" },
    },
  },
} as const;

/** Public routes: the token (a project key and a session) and the key set (no key). */
export const jwtRoutes =
  (ctx: AuthServices): FastifyPluginAsync =>
  async (app) => {
    const keys = ctx.signingKeys;
    await keys.start();
    app.addHook('onClose', async () => keys.stop());

    app.post(
      '/api/v1/auth/token',
      {
        onRequest: ctx.access.hook(AUTH_KEYS),
        schema: {
          summary:
            'Exchange a session for a short-lived JWT a backend verifies offline against the JWKS; a revoked or expired session is SESSION_INVALID at the next exchange',
          tags: ['auth'],
          security: serviceKeyAndSession,
          response: { ...tokenResponse, ...errors },
        },
      },
      async (req, reply) => {
        const caller = req.caller!;
        const { session } = await ctx.sessions.check(caller, bearerOf(req.headers));
        const { jwtAudience, jwtTtlMs } = await ctx.projects.settings(caller.project.id);
        const { claims, expiresAt } = tokenClaims({
          issuer: ctx.config.baseUrl,
          audience: jwtAudience ?? defaultJwtAudience(caller.project.slug),
          ttlMs: jwtTtlMs,
          now: clock.now(),
          project: caller.project,
          session,
        });
        reply.header('cache-control', 'no-store');
        return { token: await keys.sign(claims), expiresAt: new Date(expiresAt).toISOString() };
      },
    );

    for (const path of JWKS_PATHS)
      app.get(
        path,
        {
          schema: {
            summary: "The public keys of the project JWTs (JWKS): verify a token's signature offline with the key of its kid",
            tags: ['auth'],
            response: { 200: { type: 'object', required: ['keys'], properties: { keys: { type: 'array', items: jwkSchema } } } },
          },
        },
        async (_req, reply) => {
          // Public keys only, for any origin: the set is the same for everyone.
          reply.header('cache-control', `public, max-age=${JWKS_MAX_AGE_S}`).header('access-control-allow-origin', '*');
          return keys.jwks();
        },
      );
  };

const hide = { hide: true, tags: ['admin'] };

/** Admin routes (behind the admin token): the keys with their states, and a rotation. */
export const jwtAdminRoutes =
  (ctx: AuthServices): FastifyPluginAsync =>
  async (app) => {
    const base = '/admin/v1/auth/signing-keys';
    app.get(base, { schema: hide }, async () => ({
      data: await ctx.signingKeys.list(),
      publishLeadSeconds: PUBLISH_LEAD_MS / 1000,
      overlapSeconds: OVERLAP_MS / 1000,
    }));

    app.post<{ Body: { now?: boolean } | undefined }>(
      `${base}/rotate`,
      { schema: { ...hide, body: { type: ['object', 'null'], additionalProperties: false, properties: { now: { type: 'boolean' } } } } },
      async (req) => {
        const now = req.body?.now === true;
        const key = await ctx.signingKeys.rotate(now);
        await ctx.operatorAudit(req, { action: 'signing_key.rotate', target: `signing_key:${key.kid}`, details: { now, activeFrom: key.activeFrom } });
        return key;
      },
    );
  };
