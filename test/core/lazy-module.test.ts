// deferModule: a package's eager require of another gets a stand-in that loads the real
// module on first use and then behaves as it does (read, Object.assign, `in`).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import { deferModule } from '../../core/lazy-module.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A package `name` with `source` as its index.js, and a parent.js beside it with `parentSource`; returns parent.js's path. */
function fixture(name: string, source: string, parentSource: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-lazy-'));
  dirs.push(dir);
  fs.mkdirSync(path.join(dir, 'node_modules', name), { recursive: true });
  fs.writeFileSync(path.join(dir, 'node_modules', name, 'index.js'), source);
  const parent = path.join(dir, 'parent.js');
  fs.writeFileSync(parent, parentSource);
  return parent;
}

describe('deferModule', () => {
  it('loads the module only when it is first used, then forwards to it', () => {
    const parent = fixture(
      'heavy',
      'globalThis.__heavyLoads = (globalThis.__heavyLoads || 0) + 1; module.exports = { value: 42, twice(x) { return 2 * x; } };',
      "module.exports = require('heavy');",
    );
    const g = globalThis as { __heavyLoads?: number };

    deferModule(parent, 'heavy');
    const got = createRequire(import.meta.url)(parent) as { value: number; twice(x: number): number };
    expect(g.__heavyLoads).toBeUndefined();

    expect(got.value).toBe(42);
    expect(g.__heavyLoads).toBe(1);
    expect('twice' in got).toBe(true);
    const mixed = Object.assign({}, got);
    expect(mixed.twice(3)).toBe(6);
    // Later requires get the real module, loaded once.
    expect(createRequire(parent)('heavy')).toEqual({ value: 42, twice: expect.any(Function) });
    expect(g.__heavyLoads).toBe(1);
  });

  it('holds the named functions of a module taken apart as it loads, and loads it on the first call', () => {
    // The way mailparser takes html-to-text: one function, out of the module, as it loads.
    const parent = fixture(
      'convert',
      'globalThis.__convertLoads = (globalThis.__convertLoads || 0) + 1; module.exports = { upper: (s) => s.toUpperCase(), other: 1 };',
      "const { upper } = require('convert'); module.exports = (s) => upper(s);",
    );
    const g = globalThis as { __convertLoads?: number };

    deferModule(parent, 'convert', ['upper']);
    const upper = createRequire(import.meta.url)(parent) as (s: string) => string;
    expect(g.__convertLoads).toBeUndefined();
    expect(upper('abc')).toBe('ABC');
    expect(g.__convertLoads).toBe(1);
    expect(upper('x')).toBe('X');
    expect(g.__convertLoads).toBe(1);
  });
});
