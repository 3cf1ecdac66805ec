// control/console/static.ts on a throwaway build dir (Fastify inject): only files found at start are
// served, by exact path; other paths get index.html, a missing asset 404; a directory without a build
// answers 503 saying to build it; encodings are negotiated as the client asks.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { consoleStatic, loadConsoleFiles, pickEncoding } from '../../../control/console/static.js';
import type { Logger } from '../../../core/log.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'console-static-'));
const dir = path.join(tmp, 'console');
fs.mkdirSync(path.join(dir, 'assets'), { recursive: true });
fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><script type="module" src="/console/assets/app-1.js"></script>');
fs.writeFileSync(path.join(dir, 'assets', 'app-1.js'), `console.log(${JSON.stringify('x'.repeat(2000))});`);
fs.writeFileSync(path.join(tmp, 'secret.txt'), 'outside the build');
fs.symlinkSync(path.join(tmp, 'secret.txt'), path.join(dir, 'assets', 'link.txt'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

function logger() {
  const lines: Array<[string, unknown, string]> = [];
  const log = {
    warn: (o: unknown, m: string) => lines.push(['warn', o, m]),
    info: (o: unknown, m: string) => lines.push(['info', o, m]),
  } as unknown as Logger;
  return { log, lines };
}

async function app(d: string) {
  const { log, lines } = logger();
  const a = Fastify();
  await a.register(consoleStatic, { dir: d, log });
  return { a, lines };
}

describe('console static files', () => {
  it('serves only the files found at start, by exact path', async () => {
    const { a } = await app(dir);
    expect((await a.inject('/console/assets/app-1.js')).statusCode).toBe(200);
    // A symlink in the build is not followed; a file added after start is not served.
    expect((await a.inject('/console/assets/link.txt')).statusCode).toBe(404);
    fs.writeFileSync(path.join(dir, 'assets', 'late.js'), '1');
    expect((await a.inject('/console/assets/late.js')).statusCode).toBe(404);
    for (const p of ['/console/..%2fsecret.txt', '/console/../secret.txt', '/console/%2e%2e/secret.txt', '/console/assets/..%2f..%2fsecret.txt']) {
      const r = await a.inject(p);
      expect(r.body, p).not.toContain('outside the build');
    }
    const page = await a.inject('/console/some/route');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('app-1.js');
    expect(page.headers['cache-control']).toBe('no-cache');
    expect(page.headers['x-frame-options']).toBe('DENY');
  });

  it('answers 503 with a clear message when the build is missing, logged once at start', async () => {
    const { a, lines } = await app(path.join(tmp, 'nothing'));
    expect(lines.filter(([lvl]) => lvl === 'warn')).toHaveLength(1);
    for (const p of ['/console/', '/console/assets/app-1.js', '/console/emails']) {
      const r = await a.inject(p);
      expect(r.statusCode).toBe(503);
      expect(r.json()).toMatchObject({ code: 'INTERNAL', error: expect.stringContaining('npm run build') });
      expect(r.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    }
    expect(lines.filter(([lvl]) => lvl === 'warn')).toHaveLength(1);
  });

  it('negotiates the encoding: brotli before gzip, q=0 refuses, none when not offered', () => {
    const f = loadConsoleFiles(dir)!.get('assets/app-1.js')!;
    expect(f.gzip).toBeDefined();
    const withBr = { ...f, br: Buffer.from('b') };
    expect(pickEncoding('gzip, deflate, br', withBr)).toBe('br');
    expect(pickEncoding('br;q=0, gzip', withBr)).toBe('gzip');
    expect(pickEncoding('gzip;q=0', withBr)).toBeUndefined();
    expect(pickEncoding('identity', withBr)).toBeUndefined();
    expect(pickEncoding(undefined, withBr)).toBeUndefined();
    expect(pickEncoding('*', withBr)).toBe('gzip');
    // Tiny files are not compressed at all.
    expect(loadConsoleFiles(dir)!.get('index.html')!.gzip).toBeUndefined();
  });
});
