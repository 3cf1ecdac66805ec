// `npm run build`: compiles the server's TypeScript to plain JavaScript under dist/,
// the same tree, so the running processes need no TypeScript loader (tsx costs about
// 40 MB of memory in each of the three processes). `npm start` and the tests run dist/.
// Files used as they are at run time (the DKIM worker, the widget's browser sources,
// which control bundles for browsers itself) are copied.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/**
 * The compiled tree: dist/, or POSTGATE_BUILD_DIR (a folder name inside the checkout, so
 * node_modules resolve) when several test runs share one checkout and must not rebuild
 * each other's tree mid-run.
 */
export const dist = path.join(root, process.env.POSTGATE_BUILD_DIR || 'dist');
const SOURCES = ['core', 'common', 'control', 'auth', 'gateway', 'plugins', 'proto'];
/** Not server code: the React SDK's own build and packages, and the widget's browser sources (copied). */
const SKIP = [path.join('auth', 'sdk', 'dist'), path.join('auth', 'sdk', 'node_modules'), path.join('auth', 'hosted', 'browser')];
const COPY = [
  path.join('gateway', 'dkim-sign.cjs'),
  path.join('gateway', 'dkim-relaxed.cjs'),
  path.join('control', 'smtp', 'self-signed.cjs'),
  path.join('auth', 'hosted', 'widget.css'),
  path.join('auth', 'hosted', 'browser'),
];

function walk(dir: string, out: string[] = []): string[] {
  for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (SKIP.includes(rel)) continue;
    if (e.isDirectory()) walk(rel, out);
    else out.push(rel);
  }
  return out;
}

const isCode = (f: string) => f.endsWith('.ts') && !f.endsWith('.d.ts');
/** Haraka require()s its plugins: they are CommonJS (their package.json says so). */
const isPlugin = (f: string) => f.startsWith(`plugins${path.sep}`);

export function build(): void {
  const files = SOURCES.flatMap((d) => walk(d));
  const code = files.filter(isCode);
  fs.rmSync(dist, { recursive: true, force: true });
  const common = { outdir: dist, outbase: root, platform: 'node', target: 'node20', logLevel: 'warning' } as const;
  buildSync({ ...common, entryPoints: code.filter((f) => !isPlugin(f)).map((f) => path.join(root, f)), format: 'esm' });
  buildSync({ ...common, entryPoints: code.filter(isPlugin).map((f) => path.join(root, f)), format: 'cjs' });
  for (const f of COPY) fs.cpSync(path.join(root, f), path.join(dist, f), { recursive: true });
  for (const f of files.filter((x) => isPlugin(x) && x.endsWith('package.json'))) {
    const pkg = JSON.parse(fs.readFileSync(path.join(root, f), 'utf8')) as { main: string };
    fs.writeFileSync(path.join(dist, f), JSON.stringify({ ...pkg, main: pkg.main.replace(/\.ts$/, '.js') }, null, 2));
  }
  fs.writeFileSync(path.join(dist, 'package.json'), JSON.stringify({ type: 'module', private: true }));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const t0 = performance.now();
  build();
  console.log(`dist/ built in ${Math.round(performance.now() - t0)} ms`);
  const t1 = performance.now();
  const { buildConsole } = await import('./build-console.js');
  await buildConsole(dist);
  console.log(`dist/console built in ${Math.round(performance.now() - t1)} ms`);
}
