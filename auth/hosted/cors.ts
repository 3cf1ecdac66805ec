// Browsers call the auth API from apps' pages (the React SDK with an auth-scope
// key; the hosted endpoints). No cookies are involved anywhere, so answers may
// name the caller's origin; what keeps a foreign page out is the project's
// allowed origins: a key-route request whose Origin the key's project does not
// allow is refused (REDIRECT_NOT_ALLOWED), readably, so the SDK can show why.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Hosted } from './project.js';

const API = '/api/v1/auth/';
const EXPOSED = 'retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset';

/** The OAuth callback is a top-level navigation, never a fetch. */
const isApi = (url: string) => url.startsWith(API) && !url.startsWith(`${API}callback/`);

export function corsHooks(app: FastifyInstance, hosted: Hosted): void {
  // Callback-style hooks: most requests (servers calling) carry no Origin and pass straight through.
  app.addHook('onRequest', (req, reply, done) => {
    const origin = req.headers.origin;
    // Set now so that every answer, errors included, is readable by the page.
    if (typeof origin === 'string' && isApi(req.url))
      reply.header('access-control-allow-origin', origin).header('vary', 'Origin').header('access-control-expose-headers', EXPOSED);
    done();
  });

  // Runs after the key routes resolved the caller (their own onRequest hook), before the handler.
  app.addHook('preHandler', (req: FastifyRequest, _reply, done) => {
    if (!req.caller || typeof req.headers.origin !== 'string' || !isApi(req.url)) return done();
    hosted.checkRequestOrigin(req, req.caller.project.id).then(
      () => done(),
      (err: Error) => done(err),
    );
  });

  app.options(`${API}*`, { schema: { hide: true } }, async (req, reply) => {
    const origin = req.headers.origin;
    if (typeof origin === 'string') {
      reply
        .header('access-control-allow-methods', 'GET, POST, DELETE')
        .header('access-control-allow-headers', 'content-type, x-service-key, authorization')
        .header('access-control-max-age', '600');
    }
    return reply.code(204).send();
  });
}
