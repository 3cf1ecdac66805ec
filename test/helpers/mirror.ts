// Which source modules have a unit test at the mirrored path (`core/x/y.ts` → `test/core/x/y.test.ts`),
// and which have none: information for the README and for whoever picks the next test to write, not
// a rule (test/layout.test.ts prints it). Run it alone with `node --import tsx test/helpers/mirror.ts`.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The folders whose modules unit tests mirror. */
export const MIRRORED = ['core', 'common', 'control', 'auth', 'gateway', 'plugins'];
const SKIP = new Set(['node_modules', 'gen', 'dist']);

/** Folders whose modules a shared suite tests rather than a test each: the store backends (one conformance suite). */
export const SUITES: Readonly<Record<string, string>> = {
  'control/store/sqlite/': 'test/control/store/sqlite.test.ts',
  'control/store/postgres/': 'test/control/store/postgres.test.ts',
};

export interface Module {
  /** Repository-relative, e.g. `control/mail/rules.ts`. */
  file: string;
  lines: number;
  /** `test/control/mail/rules.test.ts`. */
  test: string;
  tested: boolean;
  /** The shared suite that covers it when it has no test of its own. */
  suite?: string;
}

function sources(dir: string, out: string[] = []): string[] {
  for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, e.name);
    if (e.isDirectory()) {
      if (!SKIP.has(e.name)) sources(rel, out);
    } else if (/\.(ts|cjs)$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/** Every source module of the mirrored folders, with its mirrored test path and whether that exists. */
export function modules(): Module[] {
  return MIRRORED.flatMap((d) => sources(d))
    .sort()
    .map((file) => {
      const test = `test/${file.replace(/\.(ts|cjs)$/, '.test.ts')}`;
      const suite = Object.entries(SUITES).find(([folder]) => file.startsWith(folder))?.[1];
      return {
        file,
        lines: fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n').length,
        test,
        tested: fs.existsSync(path.join(ROOT, test)),
        ...(suite ? { suite } : {}),
      };
    });
}

/** The list as text: counts, then the modules without a mirrored test, largest first. */
export function report(list: Module[] = modules()): string {
  const bySuite = list.filter((m) => !m.tested && m.suite);
  const missing = list.filter((m) => !m.tested && !m.suite).sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file));
  const byFolder = MIRRORED.map((d) => {
    const mine = list.filter((m) => m.file.startsWith(`${d}/`));
    return `${d}/ ${mine.filter((m) => m.tested).length}/${mine.length}`;
  });
  return [
    `${list.filter((m) => m.tested).length} of ${list.length} source modules have a unit test at the mirrored path (${byFolder.join(', ')});`,
    `${bySuite.length} more are store backends, tested by the conformance suite (${[...new Set(bySuite.map((m) => m.suite))].join(', ')}).`,
    'Without one (lines; many are wiring, routes or types, tested end to end in test/e2e/):',
    ...missing.map((m) => `  ${String(m.lines).padStart(5)}  ${m.file}`),
  ].join('\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) console.log(report());
