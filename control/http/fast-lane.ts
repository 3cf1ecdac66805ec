// Answers for the hottest read route straight from memory, in front of Fastify.
//
// An app calls GET /api/v1/auth/session on every protected request. When its key,
// session and user are all in the in-process caches, the whole answer is known
// before Fastify would have built its request and reply objects and run its router
// and hooks. Measured here (bench/session.ts): a raw Node handler answers 1.28x the
// requests of a Fastify hello-world; through Fastify the cached check reached 0.6x of
// that hello-world, through this lane 0.9-1.0x.
//
// A route defined in Fastify as usual (schema, OpenAPI, every error) may also
// register an answerer here. The answerer either writes the complete answer from
// memory and returns true, or returns false without touching the response, and
// Fastify handles the request the ordinary way: cache misses, refusals, browser
// requests (their CORS headers and origin checks live in Fastify hooks) and
// anything unusual all take the one ordinary path.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Registry } from '../../core/metrics.js';
import { httpMetrics, type HttpMetrics } from './metrics.js';
import type { HttpSettings } from '../../core/config.js';

export type Answerer = (req: IncomingMessage, res: ServerResponse) => boolean;

/** The one answer an answerer gives: status 200 with a JSON body, headers as Fastify would send them. */
export function sendJson(res: ServerResponse, body: string, bytes: number): true {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': bytes });
  res.end(body);
  return true;
}

// Counted and timed under the names Fastify's answers are (fastify.ts, control/http/metrics.ts), so
// /metrics sees every answer: the path registered here is also the Fastify route's pattern.
interface Lane {
  answer: Answerer;
  timed: { observe(v: number): void };
}

export class FastLane {
  private readonly gets = new Map<string, Lane>();
  private readonly counted: HttpMetrics;
  private readonly answered: { inc(): void };

  constructor(
    metrics: Registry,
    private readonly http: HttpSettings,
  ) {
    this.counted = httpMetrics(metrics);
    this.answered = this.counted.responses.with({ status: '200' });
  }

  /** Registers the answerer for GET of exactly `path` (no query string). */
  get(path: string, answer: Answerer): void {
    if (this.gets.has(path)) throw new Error(`fast lane: ${path} already has an answerer`);
    this.gets.set(path, { answer, timed: this.counted.duration.with({ route: path, method: 'GET', status_class: '2xx' }) });
  }

  /** Fastify's serverFactory: the HTTP server, with the fast lane before Fastify's own handler. */
  server(fastify: (req: IncomingMessage, res: ServerResponse) => void): http.Server {
    // Node enforces the request and header timeouts when it checks its connections, every 30 s by default.
    const connectionsCheckingInterval = Math.max(250, Math.min(5000, this.http.requestTimeoutMs / 4));
    const server = http.createServer({ connectionsCheckingInterval }, (req, res) => {
      const lane = req.method === 'GET' ? this.gets.get(req.url!) : undefined;
      if (lane) {
        const started = performance.now();
        if (lane.answer(req, res)) {
          lane.timed.observe((performance.now() - started) / 1000);
          this.answered.inc();
          this.counted.fromMemory.inc();
          return;
        }
      }
      fastify(req, res);
    });
    // Fastify applies these only to servers it creates itself. Without a request timeout a client
    // that announces a body and never finishes it holds the connection (and its buffers) forever.
    server.keepAliveTimeout = this.http.keepAliveTimeoutMs;
    server.requestTimeout = this.http.requestTimeoutMs;
    server.headersTimeout = Math.min(this.http.headersTimeoutMs, this.http.requestTimeoutMs);
    return server;
  }
}
