// One budget for the request bodies control holds at once, over every connection. Each
// request with a body reserves its Content-Length (its route's limit when chunked) before
// the body is read and gives it back when its answer is done or its socket closes. What
// does not fit is answered 503 at once: twenty slow 5 MB uploads cannot grow the heap by
// 100 MB while the per-request limits and timeouts each hold.
//
// Within that budget, bodies over SMALL_BODY_BYTES are read and worked on `activeBytes` at a
// time; the next such requests wait their turn (in arrival order) with their bodies unread, in
// the kernel's socket buffers rather than control's heap. A burst of large batches is CPU-bound,
// so reading them all at once only holds more in memory: eight clients sending batches of 100
// 20 kB emails took control to 128-132 MB anonymous memory, two at a time (4 MB) to 107, at
// the same rate. A request waits at most MAX_WAIT_MS, then is read anyway: a stalled upload
// holding the window cannot stall the others for longer.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../core/errors.js';

/** The longest a request waits for the active window before its body is read regardless. */
export const MAX_WAIT_MS = 1000;
/** Bodies up to this size never wait (a sign-in or a single send): what they hold is small. */
export const SMALL_BODY_BYTES = 64 * 1024;

export interface BodyBudget {
  readonly inFlight: number;
  readonly refused: number;
  /** Bytes of the requests whose bodies are being read or worked on (the active window). */
  readonly active: number;
  /** Requests that waited for the active window, since start. */
  readonly waited: number;
  hook(req: FastifyRequest, reply: FastifyReply): Promise<void>;
}

interface Waiter {
  bytes: number;
  start: () => void;
}

export function bodyBudget(limitBytes: number, activeBytes: number, defaultBodyLimit: number): BodyBudget {
  let inFlight = 0;
  let refused = 0;
  let active = 0;
  let waited = 0;
  const queue: Waiter[] = [];
  // Admits waiters in order while they fit (one always fits an empty window).
  const admit = () => {
    while (queue.length && (active === 0 || active + queue[0]!.bytes <= activeBytes)) queue.shift()!.start();
  };
  return {
    get inFlight() {
      return inFlight;
    },
    get refused() {
      return refused;
    },
    get active() {
      return active;
    },
    get waited() {
      return waited;
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
      if (reserve <= SMALL_BODY_BYTES) {
        reply.raw.once('close', () => {
          inFlight -= reserve;
        });
        return;
      }
      let started = false;
      let timer: NodeJS.Timeout | undefined;
      let go!: () => void;
      const turn = new Promise<void>((resolve) => {
        go = resolve;
      });
      const waiter: Waiter = {
        bytes: reserve,
        start: () => {
          started = true;
          clearTimeout(timer);
          active += reserve;
          go();
        },
      };
      const leaveQueue = () => {
        const i = queue.indexOf(waiter);
        if (i >= 0) queue.splice(i, 1);
      };
      reply.raw.once('close', () => {
        inFlight -= reserve;
        if (started) active -= reserve;
        else {
          clearTimeout(timer);
          leaveQueue();
        }
        admit();
      });
      if (!queue.length && (active === 0 || active + reserve <= activeBytes)) return waiter.start();
      waited++;
      queue.push(waiter);
      timer = setTimeout(() => {
        leaveQueue();
        waiter.start();
      }, MAX_WAIT_MS);
      // A request whose socket closes while it waits is only taken out of the queue: nothing reads it.
      await turn;
    },
  };
}
