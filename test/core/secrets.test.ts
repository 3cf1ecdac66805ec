// The secret generated into the data dir (core/secrets.ts) is read by control and by its gateway
// as both start: the two must get the same, whole value, or every internal call is refused.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';

const exec = promisify(execFile);
const repo = path.resolve(import.meta.dirname, '../..');
let dir = '';
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('the data-dir secret', () => {
  it('is one whole value for processes that start at the same moment, mode 0600, with nothing left beside it', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-secret-'));
    const script = `import { masterSecret } from './core/secrets.ts'; process.stdout.write(masterSecret({ dataDir: ${JSON.stringify(dir)} }));`;
    const runs = await Promise.all(
      Array.from({ length: 6 }, () => exec(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: repo })),
    );
    const values = runs.map((r) => r.stdout);
    expect(values[0]).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new Set(values).size).toBe(1);
    expect(fs.readdirSync(dir)).toEqual(['secret']);
    expect(fs.statSync(path.join(dir, 'secret')).mode & 0o777).toBe(0o600);
  }, 30_000);
});
