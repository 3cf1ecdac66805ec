// Opening the store: apart from the interface (index.ts), so that the interface module
// imports no backend and no backend's import of it closes a circle. Only the composition
// root (control/main.ts), the tests and the benches import this.
import type { Invalidator } from '../../core/invalidation.js';
import type { Store, StoreConfig } from './index.js';

/**
 * Opens the store the configuration names: the one place that chooses a backend
 * (PostgreSQL when `databaseUrl` is set, else SQLite in the data dir). Each backend is
 * imported only when chosen, so a node loads one driver. The store publishes its writes
 * on `invalidator` (once committed) and its own caches listen there, so every node's
 * caches drop what any node changed. Fails with one line when the database cannot be
 * opened (unreachable server, wrong password, missing database).
 */
export async function openStore(config: StoreConfig, invalidator: Invalidator): Promise<Store> {
  if (config.databaseUrl) {
    const { openPostgresStore } = await import('./postgres/store.js');
    return openPostgresStore({ ...config, databaseUrl: config.databaseUrl }, invalidator);
  }
  const { openSqliteStore } = await import('./sqlite/store.js');
  return openSqliteStore(config, invalidator);
}
