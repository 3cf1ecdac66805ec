// The auth API's routes (paths under /api/v1/auth/). Every
// route but the OAuth callback needs a project key of kind live or test and
// scope all or auth; the key's kind selects the environment.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ApiError, invalid } from '../core/errors.js';
import type { Caller, KeyRequirement } from '../control/api-keys/authenticate.js';
import { bearerOf, fromHeaders } from '../control/api-keys/credentials.js';
import { sendJson, type FastLane } from '../control/http/fast-lane.js';
import { isAddress } from '../common/address.js';
import type { Origin, SessionRow, UserRow } from '../control/store/index.js';
import type { AuthServices } from './services.js';
import { scopeOf } from './sessions.js';
import type { Attempt } from './events.js';
import { clientIp, connectionIp, regionAllows } from './region.js';
import { checkWidget, type WidgetFields } from './telegram.js';
import { CredentialError, type Method, type Profile, type ProviderConfig } from './providers/types.js';
import { providers } from './providers/index.js';
import { clientIpHeader, errors, schemas, serviceKey, serviceKeyAndSession, sessionOut, sessionUserOut, answerSignIn } from './schemas.js';

export const AUTH_KEYS: KeyRequirement = { kinds: ['live', 'test'], scopes: ['all', 'auth'] };
const P = '/api/v1/auth';
const tags = ['auth'];
const E164 = /^\+[1-9]\d{6,14}$/;

function email(input: string): string {
  const e = input.trim().toLowerCase();
  if (!isAddress(e)) throw invalid('email is not a valid address');
  return e;
}

function phone(input: string): string {
  const p = input.trim();
  if (!E164.test(p)) throw invalid('phone must be in E.164 form, e.g. +79991234567');
  return p;
}

/** Routes that need a project key. */
export const keyRoutes =
  (ctx: AuthServices, fastLane?: FastLane): FastifyPluginAsync =>
  async (app) => {
    const { access, projects, sessions, codes, oauth, store, events } = ctx;
    app.decorateRequest('caller', undefined);
    app.addHook('onRequest', access.hook(AUTH_KEYS));

    const originOf = (req: FastifyRequest): Origin => ({ ip: clientIp(req, req.caller!), userAgent: req.headers['user-agent'] ?? null });
    /** A sign-in step whose refusal is recorded as sign_in.failed (auth/events.ts). */
    const attempt = <T>(req: FastifyRequest, who: Attempt, step: () => Promise<T>): Promise<T> => events.watch(scopeOf(req.caller!), who, originOf(req), step);

    /** The provider's settings if `method` is enabled for the project and the user's region may use it. */
    async function enabled(req: FastifyRequest, providerId: string, method: Method): Promise<ProviderConfig> {
      const cfg = await projects.provider(req.caller!.project.id, providerId);
      if (!cfg?.methods.includes(method)) throw new ApiError('PROVIDER_NOT_ENABLED', `${providerId} with method ${method} is not enabled for this project`);
      if (!regionAllows(cfg.region, clientIp(req, req.caller!))) throw new ApiError('REGION_NOT_ALLOWED', `${providerId} is not available in your region`);
      return cfg;
    }

    const signIn = async (req: FastifyRequest, provider: string, profile: Profile) => {
      const caller = req.caller!;
      const { sessionTtlMs } = await projects.settings(caller.project.id);
      return sessions.open(caller, { provider, ...profile }, originOf(req), sessionTtlMs);
    };

    /** A signed payload is accepted once (Telegram widget, Mini App). */
    const useOnce = async (once: { digest: string; expiresAt: number } | undefined) => {
      if (once && !(await store.markUsed(once.digest, once.expiresAt))) throw new ApiError('INVALID_CREDENTIAL', 'This sign-in data was already used');
    };

    const credential = async <T>(fn: () => Promise<T>): Promise<T> => {
      try {
        return await fn();
      } catch (err) {
        if (err instanceof CredentialError) throw new ApiError('INVALID_CREDENTIAL', err.message);
        throw err;
      }
    };

    app.get(
      `${P}/providers`,
      {
        schema: {
          summary: "Sign-in providers enabled for the project (and allowed in the client's region)",
          tags,
          security: serviceKey,
          headers: clientIpHeader,
          response: { ...schemas.providers.response, ...errors },
        },
      },
      async (req) => {
        const ip = clientIp(req, req.caller!);
        const list = (await projects.enabled(req.caller!.project.id)).filter((c) => regionAllows(c.region, ip));
        return { providers: list.map((c) => ({ id: c.id, name: providers.get(c.id)!.name, methods: c.methods })) };
      },
    );

    app.post<{ Body: { provider: string; method?: string; callbackURL: string; codeChallenge?: string } }>(
      `${P}/sign-in/social`,
      {
        schema: {
          summary: 'Start an OAuth sign-in: answers the provider address to send the user to',
          tags,
          security: serviceKey,
          headers: clientIpHeader,
          body: schemas.social.body,
          response: { ...schemas.social.response, ...errors },
        },
      },
      async (req) => {
        const { provider, callbackURL } = req.body;
        const def = providers.get(provider);
        if (!def?.oauth) throw new ApiError('PROVIDER_NOT_ENABLED', `${provider} has no OAuth sign-in`);
        const cfg = await enabled(req, provider, 'oauth');
        return { url: await oauth.start(req.caller!, def, cfg, callbackURL, req.body.codeChallenge) };
      },
    );

    app.post<{ Body: { code: string; codeVerifier?: string } }>(
      `${P}/exchange-code`,
      {
        schema: {
          summary: 'Exchange the one-time svc_code from the OAuth callback for a session token (once)',
          tags,
          security: serviceKey,
          body: schemas.exchange.body,
          response: { ...errors, ...schemas.exchange.response },
        },
      },
      async (req) => {
        const { sessionTtlMs, requireCodeVerifier } = await projects.settings(req.caller!.project.id);
        const { code, codeVerifier } = req.body;
        const s = await attempt(req, {}, () =>
          sessions.exchange(req.caller!, code, sessionTtlMs, {
            ...(codeVerifier !== undefined ? { verifier: codeVerifier } : {}),
            required: requireCodeVerifier,
          }),
        );
        return answerSignIn(s);
      },
    );

    app.post<{ Body: { provider: string; method: Method; credential: string; nonce?: string } }>(
      `${P}/verify-token`,
      {
        schema: {
          summary: 'Sign in with a credential from a provider SDK (id_token, silent token, instant token, OpenID id_token, Telegram Mini App initData)',
          tags,
          security: serviceKey,
          headers: clientIpHeader,
          body: schemas.verifyToken.body,
          response: { ...errors, ...schemas.verifyToken.response },
        },
      },
      async (req) => {
        const { provider, method, credential: cred, nonce } = req.body;
        const verify = providers.get(provider)?.verify?.[method];
        if (!verify) throw new ApiError('PROVIDER_NOT_ENABLED', `${provider} has no ${method} sign-in`);
        const s = await attempt(req, { provider }, async () => {
          const cfg = await enabled(req, provider, method);
          const { telegramWindowMs } = await projects.settings(req.caller!.project.id);
          const { once, ...profile } = await credential(() => verify(cfg, cred, { ...(nonce !== undefined ? { nonce } : {}), windowMs: telegramWindowMs }));
          await useOnce(once);
          return signIn(req, provider, profile);
        });
        return answerSignIn(s);
      },
    );

    app.post<{ Body: WidgetFields }>(
      `${P}/sign-in/telegram/widget`,
      {
        schema: {
          summary: 'Sign in with Telegram Login Widget data (HMAC-SHA256 over every field, recent auth_date, usable once)',
          tags,
          security: serviceKey,
          headers: clientIpHeader,
          body: schemas.telegramWidget.body,
          response: { ...errors, ...schemas.telegramWidget.response },
        },
      },
      async (req) => {
        const s = await attempt(req, { provider: 'telegram' }, async () => {
          const cfg = await enabled(req, 'telegram', 'widget');
          const { telegramWindowMs } = await projects.settings(req.caller!.project.id);
          const { once, ...profile } = await credential(async () => checkWidget(cfg.botToken!, req.body, telegramWindowMs));
          await useOnce(once);
          return signIn(req, 'telegram', profile);
        });
        return answerSignIn(s);
      },
    );

    const codeSent = { success: true, message: 'If the address can receive it, a sign-in code is on its way' };

    app.post<{ Body: { email: string } }>(
      `${P}/sign-in/email-otp/send`,
      {
        schema: {
          summary: 'Email a 6-digit sign-in code (valid 10 minutes); the same answer whether or not an account exists',
          tags,
          security: serviceKey,
          headers: clientIpHeader,
          body: schemas.emailSend.body,
          response: { ...schemas.emailSend.response, ...errors },
        },
      },
      async (req) => {
        const to = email(req.body.email);
        const cfg = await enabled(req, 'email', 'otp');
        const { codeFrom } = await projects.settings(req.caller!.project.id);
        await codes.send(req.caller!, 'email', to, clientIp(req, req.caller!), cfg, codeFrom);
        return codeSent;
      },
    );

    app.post<{ Body: { email: string; code: string } }>(
      `${P}/sign-in/email-otp/verify`,
      {
        schema: {
          summary: 'Sign in with an email code',
          tags,
          security: serviceKey,
          headers: clientIpHeader,
          body: schemas.emailVerify.body,
          response: { ...errors, ...schemas.emailVerify.response },
        },
      },
      async (req) => {
        const address = email(req.body.email);
        await attempt(req, { email: address, provider: 'email' }, async () => {
          await enabled(req, 'email', 'otp');
          await codes.verify(req.caller!, 'email', address, req.body.code, clientIp(req, req.caller!));
        });
        const s = await signIn(req, 'email', {
          subject: address,
          email: address,
          emailVerified: true,
          name: null,
          avatarUrl: null,
          phone: null,
          username: null,
        });
        return answerSignIn(s);
      },
    );

    app.post<{ Body: { phone: string } }>(
      `${P}/sign-in/sms-otp/send`,
      {
        schema: {
          summary: 'Text a 6-digit sign-in code (valid 10 minutes) to an E.164 number',
          tags,
          security: serviceKey,
          headers: clientIpHeader,
          body: schemas.smsSend.body,
          response: { ...schemas.smsSend.response, ...errors },
        },
      },
      async (req) => {
        const to = phone(req.body.phone);
        const cfg = await enabled(req, 'sms', 'otp');
        await codes.send(req.caller!, 'sms', to, clientIp(req, req.caller!), cfg, null);
        return codeSent;
      },
    );

    app.post<{ Body: { phone: string; code: string } }>(
      `${P}/sign-in/sms-otp/verify`,
      {
        schema: {
          summary: 'Sign in with an SMS code',
          tags,
          security: serviceKey,
          headers: clientIpHeader,
          body: schemas.smsVerify.body,
          response: { ...errors, ...schemas.smsVerify.response },
        },
      },
      async (req) => {
        const number = phone(req.body.phone);
        await attempt(req, { phone: number, provider: 'sms' }, async () => {
          await enabled(req, 'sms', 'otp');
          await codes.verify(req.caller!, 'sms', number, req.body.code, clientIp(req, req.caller!));
        });
        const s = await signIn(req, 'sms', {
          subject: number,
          email: null,
          emailVerified: false,
          name: null,
          avatarUrl: null,
          phone: number,
          phoneVerified: true,
          username: null,
        });
        return answerSignIn(s);
      },
    );

    // This route runs on every request of an app: the JSON answer of a cached session is built once per (session, user)
    // pair, with exactly the fields of its response schema, and sent as it is.
    const answers = new WeakMap<SessionRow, { user: UserRow; json: string; bytes: number }>();
    const answerOf = ({ user, session }: { user: UserRow; session: SessionRow }) => {
      let a = answers.get(session);
      if (a?.user !== user) {
        const json = JSON.stringify({ user: sessionUserOut(user, session.provider), session: sessionOut(session) });
        a = { user, json, bytes: Buffer.byteLength(json) };
        answers.set(session, a);
      }
      return a;
    };
    app.get(
      `${P}/session`,
      {
        schema: {
          summary: 'The session of a token (call on every protected request): answered from memory, revocation is immediate',
          tags,
          security: serviceKeyAndSession,
          response: { ...schemas.session.response, ...errors },
        },
      },
      async (req, reply) => {
        const a = answerOf(await sessions.check(req.caller!, bearerOf(req.headers)));
        return reply.type('application/json; charset=utf-8').send(a.json);
      },
    );
    // The same check when the key, session and user are all in memory, before Fastify. Browsers (an Origin header) take
    // the ordinary path, where their CORS headers and origin check are.
    fastLane?.get(`${P}/session`, (req, res) => {
      if (req.headers.origin !== undefined) return false;
      const caller = access.allowedFromCache(fromHeaders(req.headers), AUTH_KEYS);
      const info = caller && sessions.cached(caller, bearerOf(req.headers));
      if (!info) return false;
      const a = answerOf(info);
      return sendJson(res, a.json, a.bytes);
    });

    app.post(
      `${P}/sign-out`,
      {
        schema: {
          summary: 'End a session: the token is invalid at once',
          tags,
          security: serviceKeyAndSession,
          response: { ...schemas.signOut.response, ...errors },
        },
      },
      async (req) => {
        await sessions.signOut(req.caller!, bearerOf(req.headers), originOf(req));
        return { success: true };
      },
    );

    app.get<{ Querystring: { email?: string; phone?: string } }>(
      `${P}/test/code`,
      {
        schema: {
          summary: 'Test-kind keys only: the current sign-in code of an address (test codes are never sent)',
          tags,
          security: serviceKey,
          querystring: schemas.testCode.querystring,
          response: { ...schemas.testCode.response, ...errors },
        },
      },
      async (req) => {
        const caller: Caller = req.caller!;
        if (caller.key.kind !== 'test') throw new ApiError('INVALID_API_KEY', 'Only test-kind keys can read sign-in codes');
        const r =
          req.query.email !== undefined
            ? await codes.testCode(caller, 'email', email(req.query.email))
            : await codes.testCode(caller, 'sms', phone(req.query.phone ?? ''));
        return { code: r.code, expiresAt: new Date(r.expiresAt).toISOString() };
      },
    );
  };

/** The provider's redirect back (no key: the browser comes here), under the API prefix and at the short /callback path. */
export const callbackRoutes =
  (ctx: AuthServices): FastifyPluginAsync =>
  async (app) => {
    for (const path of [`${P}/callback/:provider`, '/callback/:provider']) {
      app.get<{ Params: { provider: string }; Querystring: Record<string, string> }>(
        path,
        {
          schema: {
            summary: `OAuth callback (register ${ctx.config.baseUrl}/callback/<provider> at the provider); redirects to the app with svc_code or error`,
            tags,
            params: schemas.callback.params,
            querystring: schemas.callback.querystring,
            response: { ...schemas.callback.response, 400: errors[400] },
          },
        },
        async (req, reply) => {
          // Per address only: the project is known from the state, which a start (limited per project) stored.
          ctx.keyless.ip(req, 'callback');
          const query = new URLSearchParams(req.query);
          const target = await ctx.oauth.callback(req.params.provider, query, { ip: connectionIp(req), userAgent: req.headers['user-agent'] ?? null });
          reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
          return reply.redirect(target, 302);
        },
      );
    }
  };
