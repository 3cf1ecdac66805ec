// The console is type-checked against the admin API's OpenAPI document: `npm run gen` (run before the
// tests) writes console/src/gen/admin-api.d.ts from the admin routes' schemas, and a route whose answer
// changes shape breaks the pages that read it here, in CI, rather than in an operator's browser.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('console types', () => {
  it('the front end type-checks against the generated admin API types', () => {
    expect(fs.existsSync(path.join(ROOT, 'console/src/gen/admin-api.d.ts'))).toBe(true);
    const tsc = spawnSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', 'console'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
  });
});
