// One budget for the request bodies control holds at once, over every connection. Each
// request with a body reserves its Content-Length (its route's limit when chunked) before
// the body is read and gives it back when its answer is done or its socket closes. What
// does not fit is answered 503 at once: twenty slow 5 MB uploads cannot grow the heap by
// 100 MB while the per-request limits and timeouts each hold.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../core/errors.js';

export interface BodyBudget {
  readonly inFlight: number;
  readonly refused: number;
  hook(req: FastifyRequest, reply: FastifyReply): Promise<void>;
}

export function bodyBudget(limitBytes: number, defaultBodyLimit: number): BodyBudget {
  let inFlight = 0;
  let refused = 0;
  return {
    get inFlight() {
      return inFlight;
    },
    get refused() {
      return refused;
    },
    async hook(req, reply) {
      const declared = req.headers['content-length'];
      const chunked = req.headers['transfer-encoding'] !== undefined;
      if (!chunked && (declared === undefined || declared === '0')) return; // no body: the hot GET paths pay nothing more
      const routeLimit = req.routeOptions.bodyLimit ?? defaultBodyLimit;
      const n = Number(declared);
      const reserve = chunked || !Number.isFinite(n) ? routeLimit : Math.min(n, routeLimit);
      if (inFlight + reserve > limitBytes) {
        refused++;
        throw new ApiError('SERVER_BUSY', 'Too many request bodies in flight; try again shortly', {}, { 'Retry-After': '1', Connection: 'close' });
      }
      inFlight += reserve;
      reply.raw.once('close', () => {
        inFlight -= reserve;
      });
    },
  };
}
