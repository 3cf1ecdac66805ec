#!/usr/bin/env node
// The admin CLI. It runs the compiled tree that `npm start` runs (dist/, built by
// `npm run build`); without one, as in a checkout that was never built, the
// TypeScript sources through tsx (about 1 s more per call).
import fs from 'node:fs';

const compiled = new URL('../dist/control/cli/main.js', import.meta.url);
if (fs.existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../control/cli/main.ts');
}
