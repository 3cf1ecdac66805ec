// The console's front end (Vite's build, `<compiled tree>/console`) on the admin listener, outside the
// token guard: the files are public, the data they fetch is not. The directory is walked once at start
// and only the files found then are served, looked up by exact relative path, so no URL (.., %2f,
// symlinks added later) can reach a file outside it. Each compressible file is brotli- and gzip-compressed
// once at start, in memory (brotli in the background). Hashed assets are cached for a year; index.html
// (also the answer for any other path: the app routes by history API) is revalidated every time.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';

export interface ConsoleStaticOptions {
  /** The built front end; missing: every console page answers 503 saying to build it. */
  dir: string;
  log: Logger;
}

/** On every console answer (the issue: a strict CSP, no inline script, no framing, no third party). */
export const CONSOLE_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.webp': 'image/webp',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.json', '.svg', '.txt', '.map', '.ico']);

interface ConsoleFile {
  type: string;
  etag: string;
  body: Buffer;
  br?: Buffer;
  gzip?: Buffer;
  immutable: boolean;
}

/** Every regular file under dir by its '/'-separated relative path (symlinks are not followed). */
function walk(dir: string, rel = '', out = new Map<string, string>()): Map<string, string> {
  for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) walk(dir, r, out);
    else if (e.isFile()) out.set(r, path.join(dir, r));
  }
  return out;
}

/** The files of a built console, compressed; undefined when the directory or its index.html is missing. */
export function loadConsoleFiles(dir: string): Map<string, ConsoleFile> | undefined {
  if (!fs.existsSync(path.join(dir, 'index.html'))) return undefined;
  const files = new Map<string, ConsoleFile>();
  for (const [rel, abs] of walk(dir)) {
    const ext = path.extname(rel).toLowerCase();
    const body = fs.readFileSync(abs);
    const f: ConsoleFile = {
      type: TYPES[ext] ?? 'application/octet-stream',
      etag: `"${crypto.createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
      body,
      immutable: rel.startsWith('assets/'),
    };
    if (COMPRESSIBLE.has(ext) && body.length > 256) {
      const gzip = zlib.gzipSync(body, { level: 9 });
      if (gzip.length < body.length) f.gzip = gzip;
      // Brotli at its best quality costs about half a second for the main bundle: done on libuv's threads
      // without holding the start up, gzip answering until it is ready.
      zlib.brotliCompress(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length } }, (err, br) => {
        if (!err && br.length < body.length) f.br = br;
      });
    }
    files.set(rel, f);
  }
  return files;
}

/** The encoding to answer with from Accept-Encoding: brotli, then gzip, when offered and not refused (q=0). */
export function pickEncoding(header: string | undefined, f: ConsoleFile): 'br' | 'gzip' | undefined {
  if (!header) return undefined;
  const accepted = new Set<string>();
  for (const part of header.toLowerCase().split(',')) {
    const [name, ...params] = part.trim().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (name && !(q && Number(q.slice(2)) === 0)) accepted.add(name.trim());
  }
  if (f.br && accepted.has('br')) return 'br';
  if (f.gzip && (accepted.has('gzip') || accepted.has('*'))) return 'gzip';
  return undefined;
}

/** The path under /console/, decoded; undefined when it cannot be decoded. */
function relativePath(url: string): string | undefined {
  const raw = url.split('?')[0]!.slice('/console/'.length);
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

export const consoleStatic: FastifyPluginAsync<ConsoleStaticOptions> = async (app, { dir, log }) => {
  const files = loadConsoleFiles(dir);
  const missing = `The console is not built (no ${path.join(dir, 'index.html')}): run npm run build`;
  if (!files) log.warn({ dir }, 'console: front end not built; /console/ answers 503 until `npm run build` has run');
  else log.info({ dir, files: files.size }, 'console: front end loaded');

  app.addHook('onSend', async (_req, reply, payload) => {
    reply.headers(CONSOLE_HEADERS);
    return payload;
  });

  const send = (req: FastifyRequest, reply: FastifyReply, f: ConsoleFile) => {
    reply.header('Cache-Control', f.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
    reply.header('ETag', f.etag).header('Vary', 'Accept-Encoding').type(f.type);
    if (req.headers['if-none-match'] === f.etag) return reply.code(304).send();
    const enc = pickEncoding(req.headers['accept-encoding'], f);
    if (enc) reply.header('Content-Encoding', enc);
    return reply.send(enc === 'br' ? f.br : enc === 'gzip' ? f.gzip : f.body);
  };
  const unavailable = (reply: FastifyReply) =>
    reply
      .code(503)
      .header('Cache-Control', 'no-store')
      .send({ ...errorBody('INTERNAL', missing), statusCode: 503 });

  app.get('/console', { schema: { hide: true } }, async (req, reply) => {
    const q = req.url.indexOf('?');
    return reply.redirect(`/console/${q < 0 ? '' : req.url.slice(q)}`, 302);
  });
  app.get('/console/*', { schema: { hide: true } }, async (req, reply) => {
    if (!files) return unavailable(reply);
    const rel = relativePath(req.url);
    const f = rel === undefined ? undefined : files.get(rel);
    if (f) return send(req, reply, f);
    // A hashed asset that is not there (an old page asking for a chunk a newer build replaced) is a 404,
    // not the page: a script must not receive HTML. Any other path is the app's to route.
    if (rel?.startsWith('assets/')) return reply.code(404).header('Cache-Control', 'no-cache').send(errorBody('NOT_FOUND', 'No such console file'));
    return send(req, reply, files.get('index.html')!);
  });
};
