// The operator console's front end (console/, Vite + React) built into `<compiled tree>/console`, where
// control serves it on the admin listener (control/console). Called by `npm run build` (deploy/build.ts)
// and by the tests' global setup, after the server's build (which empties the tree first). The tree is
// passed in (deploy/build.ts's `dist`, POSTGATE_BUILD_DIR respected): importing build.ts from here would
// be a cycle its top-level await never settles.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export async function buildConsole(dist: string): Promise<void> {
  // Loaded on demand: the server's build and its tests need no bundler otherwise.
  const { build } = await import('vite');
  // Vite builds for production only when NODE_ENV is unset or production: under vitest (NODE_ENV=test)
  // it would ship React's development build and development JSX (about 60 % more to load).
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({
      configFile: path.join(root, 'console', 'vite.config.ts'),
      mode: 'production',
      logLevel: process.env.VITEST ? 'warn' : 'info',
      build: { outDir: path.join(dist, 'console'), emptyOutDir: true },
    });
  } finally {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
  }
}
