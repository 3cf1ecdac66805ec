// One-click unsubscribe (RFC 8058), public: the link in a bulk email's List-Unsubscribe.
// POST (no login, no cookies; the receiver's body is "List-Unsubscribe=One-Click" as a
// form or multipart) unsubscribes the recipient from the project's bulk mail and answers
// 200, never a redirect. GET only shows a confirmation page with a button that POSTs:
// link scanners prefetch GETs, and must not unsubscribe anyone.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import type { Store } from '../store/index.js';
import type { MailTokens } from './mail-tokens.js';
import { escapeHtml } from '../../core/html.js';

export interface UnsubscribeOptions {
  store: Store;
  tokens: MailTokens;
}

const params = { type: 'object', required: ['token'], properties: { token: { type: 'string', maxLength: 80 } } } as const;
const html = { type: 'string', description: 'An HTML page' } as const;

/** ann@example.com → a**@example.com: the page confirms whose address without showing it to a bystander. */
const mask = (address: string) => {
  const [local = '', domain = ''] = address.split('@');
  return `${local.slice(0, 1)}${'*'.repeat(Math.max(1, Math.min(local.length - 1, 6)))}@${domain}`;
};

function page(reply: FastifyReply, status: number, title: string, body: string): FastifyReply {
  // Never in a frame: the button is one click from unsubscribing (clickjacking); X-Frame-Options for browsers without CSP 2.
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)}</title>` +
        '<style>body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem}button{font:inherit;padding:.5rem 1rem}</style>' +
        `</head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`,
    );
}

export const unsubscribeRoutes: FastifyPluginAsync<UnsubscribeOptions> = async (app, { store, tokens }) => {
  // Receivers POST a form (urlencoded or multipart); the token in the URL is all that counts.
  app.addContentTypeParser(['application/x-www-form-urlencoded', 'multipart/form-data'], { parseAs: 'string', bodyLimit: 64 * 1024 }, (_req, body, done) =>
    done(null, body),
  );

  /** The recipient and project a token names, when its MAC is right. */
  async function resolve(token: string) {
    const t = tokens.verify(token);
    if (t?.kind !== 'unsubscribe') return undefined;
    const email = await store.emails.owner(t.emailId);
    const address = email && (await store.emails.recipientAt(t.emailId, t.index));
    return email && address ? { email, address } : undefined;
  }

  /** A person's browser gets a page; anything else the API's {error, code}. */
  const unknown = (req: FastifyRequest, reply: FastifyReply) => {
    if (!String(req.headers.accept ?? '').includes('text/html')) throw new ApiError('NOT_FOUND', 'This unsubscribe link is not valid');
    return page(reply, 404, 'Link not valid', '<p>This unsubscribe link is not valid. It may have been copied incompletely.</p>');
  };

  app.get<{ Params: { token: string } }>(
    '/unsubscribe/:token',
    {
      schema: {
        summary: 'Confirmation page of a one-click unsubscribe link (does not unsubscribe)',
        tags: ['unsubscribe'],
        params,
        produces: ['text/html'],
        response: { 200: html },
      },
    },
    async (req, reply) => {
      const found = await resolve(req.params.token);
      if (!found) return unknown(req, reply);
      return page(
        reply,
        200,
        'Unsubscribe',
        `<p>Stop mailings from <b>${escapeHtml(found.email.projectName)}</b> to <b>${escapeHtml(mask(found.address))}</b>?</p>` +
          '<p>Messages you need, such as receipts and sign-in codes, will still arrive.</p>' +
          '<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>',
      );
    },
  );

  app.post<{ Params: { token: string } }>(
    '/unsubscribe/:token',
    {
      schema: {
        summary: "One-click unsubscribe (RFC 8058): the recipient leaves the project's bulk mail",
        tags: ['unsubscribe'],
        params,
        consumes: ['application/x-www-form-urlencoded', 'multipart/form-data'],
        produces: ['text/html'],
        response: { 200: html },
      },
    },
    async (req, reply) => {
      const found = await resolve(req.params.token);
      if (!found) return unknown(req, reply);
      await store.suppressions.unsubscribe(found.email.projectId, found.email.id, found.address, 'one-click', clock.now());
      req.log.info({ emailId: found.email.id, projectId: found.email.projectId }, 'unsubscribed from bulk mail');
      return page(
        reply,
        200,
        'Unsubscribed',
        `<p><b>${escapeHtml(mask(found.address))}</b> will get no more mailings from <b>${escapeHtml(found.email.projectName)}</b>.</p>`,
      );
    },
  );
};
