// The tracking host, on control's public listener: `<sub>.<domain>` is a CNAME to the operator's
// tracking host, so requests arrive here with the domain's tracking host in Host. The open pixel
// (GET /o/…gif) and the click redirect (GET /c/…) answer from the signed URL alone (links.ts): no
// store read on the request path; the hit is queued for the recorder (recorder.ts). Anything that
// does not verify for the Host it came to is a 404: never a redirect to a URL that was not signed.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { clock } from '../../core/clock.js';
import { ApiError } from '../../core/errors.js';
import { BurstWatch, judge, truncateIp } from './bots.js';
import { CLICK_PREFIX, OPEN_PREFIX, type TrackingLinks } from './links.js';
import type { TrackingRecorder } from './recorder.js';

export interface TrackingRouteOptions {
  links: TrackingLinks;
  recorder: TrackingRecorder;
}

/** A transparent 1×1 GIF (42 bytes). */
export const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

const NO_STORE = 'no-store, no-cache, must-revalidate, private, max-age=0';

/** The Host a request came to, lowercased, without its port. */
export function hostOf(req: FastifyRequest): string {
  const h = String(req.headers.host ?? '').toLowerCase();
  return h.startsWith('[') ? h.slice(0, h.indexOf(']') + 1) : h.replace(/:\d+$/, '');
}

/** The URL as a header carries it: its ASCII as it is, anything else percent-encoded as UTF-8 (what a browser sends anyway). */
export const asciiUrl = (url: string): string => url.replace(/[^\x20-\x7e]/gu, (c) => encodeURIComponent(c));

const notFound = () => new ApiError('NOT_FOUND', 'This link is not valid');

export const trackingRoutes: FastifyPluginAsync<TrackingRouteOptions> = async (app, { links, recorder }) => {
  const bursts = new BurstWatch();

  function record(req: FastifyRequest, kind: 'open' | 'click', emailId: string, sentAt: number, link: string): void {
    const at = clock.now();
    const userAgent = String(req.headers['user-agent'] ?? '').slice(0, 512);
    const ip = req.ip;
    const network = truncateIp(ip);
    let verdict = judge({ kind, method: req.method, userAgent, ip, sentAt, at });
    if (kind === 'click' && bursts.click(emailId, network, link, at) && verdict.agent === 'person')
      verdict = { agent: 'scanner', reason: 'several links clicked at once' };
    recorder.add({ emailId, kind, link, at, userAgent, ip: network, agent: verdict.agent, ...(verdict.reason ? { reason: verdict.reason } : {}) });
  }

  const schema = (summary: string) => ({ hide: true, summary, tags: ['tracking'] });

  const open = async (req: FastifyRequest, reply: FastifyReply) => {
    const t = links.verify(hostOf(req), req.url);
    if (t?.kind !== 'open') throw notFound();
    record(req, 'open', t.emailId, t.sentAt, '');
    return reply.code(200).type('image/gif').header('cache-control', NO_STORE).header('x-content-type-options', 'nosniff').send(PIXEL);
  };

  const click = async (req: FastifyRequest, reply: FastifyReply) => {
    const t = links.verify(hostOf(req), req.url);
    if (t?.kind !== 'click') throw notFound();
    record(req, 'click', t.emailId, t.sentAt, t.url);
    // No Referer leaks the tracking URL to the site; nothing cached, so each click is seen.
    return reply.code(302).header('location', asciiUrl(t.url)).header('cache-control', NO_STORE).header('referrer-policy', 'no-referrer').send();
  };

  // GET (and HEAD: Fastify answers it with the GET route; judged a scanner) of any path under the prefixes.
  app.get(`${OPEN_PREFIX}*`, { schema: schema('Open tracking pixel (a 1×1 GIF) of a tracked email') }, open);
  app.get(`${CLICK_PREFIX}*`, { schema: schema('Click redirect of a tracked link (302 to the original URL)') }, click);
};
