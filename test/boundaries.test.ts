// The architecture's import rules, kept by a test rather than by review: every import
// in the source folders is read and checked against the rules in the README's "Code map".
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
const SOURCE = ['core', 'common', 'control', 'gateway', 'plugins', 'auth', 'proto', 'bin'];
/** The only files that know auth exists: they compose it into control. */
const COMPOSITION_ROOTS = new Set(['control/main.ts', 'control/app.ts', 'control/cli/main.ts']);

interface Import {
  file: string;
  /** Repository-relative path for project imports, the bare name for packages. */
  target: string;
  project: boolean;
}

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name === 'node_modules' || e.name === 'gen' || e.name === 'dist') continue;
      sourceFiles(rel, out);
    } else if (/\.(ts|tsx|js|cjs|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

const SPECIFIER =
  /(?:^|\s)(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]|(?:^|[^\w.])import\s*\(\s*['"]([^'"]+)['"]\s*\)|(?:^|[^\w.])require\s*\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s*['"]([^'"]+)['"]/gm;

function importsOf(file: string): Import[] {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const out: Import[] = [];
  for (const m of text.matchAll(SPECIFIER)) {
    const spec = m[1] ?? m[2] ?? m[3] ?? m[4]!;
    if (spec.startsWith('.')) {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)).replace(/\.js$/, '.ts');
      out.push({ file, target, project: true });
    } else out.push({ file, target: spec, project: false });
  }
  return out;
}

const files = SOURCE.flatMap((d) => sourceFiles(d));
const all = files.flatMap(importsOf);
const under = (p: string, ...folders: string[]) => folders.some((f) => p === f || p.startsWith(`${f}/`));
const show = (list: Import[]) => list.map((i) => `${i.file} -> ${i.target}`);

/** File → the source files it imports (every kind: type-only, re-exports and dynamic imports too). */
function importGraph(): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>(files.map((f) => [f, []]));
  for (const i of all) {
    if (!i.project) continue;
    const target = [i.target, i.target.replace(/\.ts$/, '.tsx')].find((t) => known.has(t));
    if (target) graph.get(i.file)!.push(target);
  }
  return graph;
}

/**
 * The import circles of `graph`: its strongly connected components (Tarjan) of more than one
 * file, or a file that imports itself, each shown as one shortest circle through its first file.
 */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = new Set<string>();
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.add(w);
    } while (w !== v);
    if (component.size > 1 || graph.get(v)?.includes(v))
      out.push(`${circleThrough(graph, component)}   (${component.size > 1 ? `${component.size} files reach one another` : 'imports itself'})`);
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return out.sort();
}

/** A shortest circle through the component's first file (breadth first inside the component). */
function circleThrough(graph: ReadonlyMap<string, readonly string[]>, component: ReadonlySet<string>): string {
  const start = [...component].sort()[0]!;
  const parent = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i]!;
    for (const w of graph.get(v) ?? []) {
      if (w === start) {
        const path = [v];
        for (let p = v; p !== start; ) path.unshift((p = parent.get(p)!));
        return [...path, start].join(' -> ');
      }
      if (component.has(w) && !parent.has(w)) {
        parent.set(w, v);
        queue.push(w);
      }
    }
  }
  throw new Error(`no circle through ${start}`); // every file of a component is on a circle
}

describe('import boundaries', () => {
  it('reads the imports it checks (the scanner is not blind)', () => {
    expect(all.length).toBeGreaterThan(300);
    expect(all.some((i) => i.file === 'control/main.ts' && i.project && under(i.target, 'auth'))).toBe(true);
    expect(all.some((i) => under(i.file, 'gateway') && i.project && under(i.target, 'core'))).toBe(true);
    expect(all.some((i) => i.target === 'better-sqlite3')).toBe(true);
  });

  it('core imports only core', () => {
    expect(show(all.filter((i) => under(i.file, 'core') && i.project && !under(i.target, 'core')))).toEqual([]);
  });

  it('the shared vocabulary (common/) imports only itself and core', () => {
    expect(show(all.filter((i) => under(i.file, 'common') && i.project && !under(i.target, 'common', 'core')))).toEqual([]);
  });

  it('the gateway and its Haraka plugins import neither control nor auth: the proto is the contract', () => {
    expect(show(all.filter((i) => under(i.file, 'gateway', 'plugins') && i.project && under(i.target, 'control', 'auth')))).toEqual([]);
  });

  it('control does not reach into the gateway', () => {
    expect(show(all.filter((i) => under(i.file, 'control') && i.project && under(i.target, 'gateway', 'plugins')))).toEqual([]);
  });

  it('only the composition roots import auth, and only its entry (createAuth)', () => {
    const intoAuth = all.filter((i) => !under(i.file, 'auth') && i.project && under(i.target, 'auth'));
    expect(show(intoAuth.filter((i) => !COMPOSITION_ROOTS.has(i.file) || i.target !== 'auth/plugin.ts'))).toEqual([]);
  });

  it('auth imports only core, common and control/{http, api-keys, store}, never the mail pipeline', () => {
    const allowed = (t: string) => under(t, 'auth', 'core', 'common', 'control/http', 'control/api-keys', 'control/store', 'proto');
    expect(show(all.filter((i) => under(i.file, 'auth') && i.project && !allowed(i.target)))).toEqual([]);
  });

  it('callers reach the store through its one module; only the composition root opens it', () => {
    const inside = (t: string) => under(t, 'control/store') && t !== 'control/store/index.ts' && t !== 'control/store/open.ts';
    expect(show(all.filter((i) => !under(i.file, 'control/store') && i.project && inside(i.target)))).toEqual([]);
    expect(show(all.filter((i) => i.target === 'control/store/open.ts' && i.file !== 'control/main.ts'))).toEqual([]);
  });

  it('the store returns refusals as data: neither it nor the mail modules it calls build an ApiError', () => {
    const store = files.filter((f) => under(f, 'control/store'));
    const called = all.filter((i) => under(i.file, 'control/store') && i.project && under(i.target, 'control/mail')).map((i) => i.target);
    expect(called.length).toBeGreaterThan(0);
    const naming = [...new Set([...store, ...called])].filter((f) => /\bApiError\b/.test(fs.readFileSync(path.join(ROOT, f), 'utf8')));
    expect(naming).toEqual([]);
  });

  it('the store interface module imports no backend', () => {
    expect(show(all.filter((i) => i.file === 'control/store/index.ts' && under(i.target, 'control/store/sqlite', 'control/store/postgres')))).toEqual([]);
  });

  it('one lifecycle, two persistences: the lifecycle decides from the vocabulary and the verdicts, the store only loads and writes', () => {
    const VOCABULARY = 'control/mail/vocabulary.ts';
    const LIFECYCLE = 'control/mail/lifecycle.ts';
    const VERDICTS = ['control/mail/rules.ts', 'control/webhooks/payload.ts', 'common/status.ts'];
    const fromMail = (i: Import) => i.project && under(i.target, 'control/mail');
    const interfaceMail = all.filter((i) => i.file === 'control/store/index.ts' && fromMail(i));
    expect(interfaceMail.map((i) => i.target)).toContain(VOCABULARY);
    expect(show(interfaceMail.filter((i) => i.target !== VOCABULARY))).toEqual([]);
    const backends = all.filter((i) => under(i.file, 'control/store') && i.file !== 'control/store/index.ts' && fromMail(i));
    expect(backends.map((i) => i.target)).toContain(LIFECYCLE);
    expect(show(backends.filter((i) => ![VOCABULARY, LIFECYCLE, ...VERDICTS].includes(i.target)))).toEqual([]);
    // The lifecycle is pure: the vocabulary, the verdicts and core (clock arithmetic, ids), nothing of the store.
    const lifecycle = all.filter((i) => i.file === LIFECYCLE && i.project);
    expect(lifecycle.map((i) => i.target)).toContain(VOCABULARY);
    expect(show(lifecycle.filter((i) => ![VOCABULARY, ...VERDICTS].includes(i.target) && !under(i.target, 'core')))).toEqual([]);
    expect(show(all.filter((i) => i.file === VOCABULARY && i.project && !under(i.target, 'common')))).toEqual([]);
  });

  it('no import circles, type-only and dynamic imports included', () => {
    expect(circles(importGraph())).toEqual([]);
  });

  it('finds import circles (the circle check is not blind)', () => {
    const g = new Map([
      ['a', ['b']],
      ['b', ['c', 'd']],
      ['c', ['a']],
      ['d', []],
      ['e', ['e', 'a']],
    ]);
    expect(circles(g)).toEqual(['a -> b -> c -> a   (3 files reach one another)', 'e -> e   (imports itself)']);
    expect(
      circles(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
    ).toEqual([]);
    expect(importGraph().get('control/main.ts')).toContain('control/store/open.ts');
  });

  it('better-sqlite3 is imported only in folders named sqlite/', () => {
    expect(show(all.filter((i) => i.target === 'better-sqlite3' && !i.file.split('/').includes('sqlite')))).toEqual([]);
  });
});
