// A real store for unit tests of what sits on it (auth's codes, sessions, project settings):
// embedded SQLite in a temporary data dir, one project, and callers of it by key kind and scope.
// No process, no network: opening it takes a few milliseconds.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Caller } from '../../control/api-keys/authenticate.js';
import type { KeyKind, KeyScope, Project, Store } from '../../control/store/index.js';
import { openStore } from '../../control/store/open.js';
import { type Invalidator, localInvalidator } from '../../core/invalidation.js';

export interface UnitStore {
  store: Store;
  /** The bus the store publishes its committed changes on (caches built on it hear them). */
  invalidator: Invalidator;
  project: Project;
  /** A caller of `project` with a key of this kind and scope. */
  caller(kind?: KeyKind, scope?: KeyScope, project?: Project): Caller;
  /** Another project in the same store. */
  another(slug: string): Promise<Project>;
  close(): Promise<void>;
}

export async function unitStore(slug = 'acme'): Promise<UnitStore> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-unit-'));
  const invalidator = localInvalidator();
  const store = await openStore({ dataDir: dir, storage: { synchronous: 'NORMAL', maxBatch: 100 } }, invalidator);
  const create = (s: string) =>
    store.projects.create({ id: `prj_${s}`, slug: s, name: s[0]!.toUpperCase() + s.slice(1), plan: 'free', createdAt: Date.now() }, []);
  const project = await create(slug);
  return {
    store,
    invalidator,
    project,
    caller: (kind = 'live', scope = 'all', p = project) => ({
      project: p,
      key: { id: `key_${p.slug}_${kind}_${scope}`, projectId: p.id, kind, scope, hint: 'pg_…', createdAt: p.createdAt, revokedAt: null },
    }),
    another: create,
    async close() {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
