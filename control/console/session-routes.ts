// The console's sign-in (admin listener, outside the token guard: this is where the token is given):
// POST /console/api/session trades the admin token for a session cookie and a CSRF token, GET gives a
// live session's CSRF token back after a reload (it is never kept in the page's storage), DELETE ends
// it on the server. The cookie is HttpOnly and SameSite=Strict, Secure over HTTPS, with no Max-Age:
// the browser drops it when it closes, and the server enforces the idle and absolute lifetimes.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { clock } from '../../core/clock.js';
import { ApiError } from '../../core/errors.js';
import type { AdminGuard } from '../admin/guard.js';
import { ownOrigin } from '../admin/guard.js';
import { audit, tokenFingerprint } from '../operations/audit.js';
import type { Store } from '../store/index.js';
import { attachSession, COOKIE_NAME, type ConsoleSession, type ConsoleSessions, cookieValue } from './sessions.js';

export interface SessionRoutesOptions {
  store: Store;
  guard: AdminGuard;
  sessions: ConsoleSessions;
}

const tags = ['console'];
const sessionSchema = {
  type: 'object',
  required: ['csrf_token', 'expires_at', 'idle_timeout_s'],
  properties: {
    csrf_token: { type: 'string', description: 'Send it as X-CSRF-Token on every admin request other than GET and HEAD' },
    expires_at: { type: 'string', format: 'date-time', description: 'The absolute end of the session' },
    idle_timeout_s: { type: 'integer', description: 'The session ends after this many seconds without a request' },
  },
} as const;

function cookie(req: FastifyRequest, value: string, clear = false): string {
  const parts = [`${COOKIE_NAME}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Strict'];
  if (req.protocol === 'https') parts.push('Secure');
  if (clear) parts.push('Max-Age=0');
  return parts.join('; ');
}

export const sessionRoutes: FastifyPluginAsync<SessionRoutesOptions> = async (app, { store, guard, sessions }) => {
  const answer = (s: ConsoleSession) => ({
    csrf_token: s.csrfToken,
    expires_at: clock.iso(s.expiresAt),
    idle_timeout_s: Math.round(sessions.idleMs / 1000),
  });
  const noStore = (reply: FastifyReply) => reply.header('Cache-Control', 'no-store');

  app.post<{ Body: { token: string } }>(
    '/console/api/session',
    {
      schema: {
        tags,
        summary: 'Sign in to the console with the admin token',
        body: { type: 'object', required: ['token'], additionalProperties: false, properties: { token: { type: 'string', maxLength: 4096 } } },
        response: { 201: sessionSchema },
      },
    },
    async (req, reply) => {
      // A sign-in form posted from another site is refused before the token is looked at.
      const origin = req.headers.origin;
      if (origin !== undefined && origin !== ownOrigin(req)) throw new ApiError('CSRF_TOKEN_INVALID', 'Cross-origin sign-in is refused');
      guard.checkToken(req, req.body.token);
      const { cookie: value, session } = sessions.open(tokenFingerprint(req.body.token));
      attachSession(req, session);
      await audit(store, req, { action: 'console.sign_in', target: 'console' });
      noStore(reply).header('Set-Cookie', cookie(req, value)).code(201);
      return answer(session);
    },
  );

  app.get(
    '/console/api/session',
    { schema: { tags, summary: "The live console session's CSRF token", response: { 200: sessionSchema } } },
    async (req, reply) => {
      const session = sessions.find(cookieValue(req.headers.cookie));
      if (!session) throw new ApiError('UNAUTHORIZED', 'No console session; sign in');
      noStore(reply);
      return answer(session);
    },
  );

  app.delete(
    '/console/api/session',
    { schema: { tags, summary: 'Sign out of the console (needs X-CSRF-Token)', response: { 204: { type: 'null', description: 'Signed out' } } } },
    async (req, reply) => {
      // Origin and CSRF token as for any change made with the cookie.
      const session = guard.consoleSession(req);
      attachSession(req, session);
      sessions.close(cookieValue(req.headers.cookie));
      await audit(store, req, { action: 'console.sign_out', target: 'console' });
      noStore(reply)
        .header('Set-Cookie', cookie(req, '', true))
        .code(204);
      return reply.send();
    },
  );
};
