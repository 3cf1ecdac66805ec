// What every benchmark needs before it starts postgate, so that its command works on a fresh
// clone right after `npm install`: the generated protobuf code (`npm run gen`, when proto/gen
// is missing or older than a .proto file) and the compiled tree (deploy/build.ts), built now
// so it matches the sources. Set POSTGATE_BUILD_DIR=dist-<name> to build beside a dist/ that
// tests running at the same time use.
//
// This module imports nothing that needs the generated code: a benchmark imports it first,
// calls prepare(), and only then imports (dynamically) what does.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function newest(dir: string, ext: string): number {
  let t = 0;
  if (!fs.existsSync(dir)) return 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && e.name.endsWith(ext)) t = Math.max(t, fs.statSync(path.join(e.parentPath ?? (e as unknown as { path: string }).path, e.name)).mtimeMs);
  }
  return t;
}

function generate(): void {
  const protos = newest(path.join(root, 'proto'), '.proto');
  const gen = newest(path.join(root, 'proto/gen'), '.ts');
  if (gen && gen >= protos) return;
  process.stderr.write('[bench] generating the protobuf code (npm run gen)\n');
  const r = spawnSync('npm', ['run', '--silent', 'gen'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('`npm run gen` failed');
}

/** Generates the protobuf code if needed and compiles the tree postgate runs from. */
export async function prepare(): Promise<void> {
  generate();
  const { build } = await import('../../deploy/build.js');
  build();
}
