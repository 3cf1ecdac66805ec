// The store's in-process caches of rarely changed, often read data (a project's
// webhooks, its verified domains). A write publishes the project's id on the
// invalidator and every cache of that channel, on every node, drops the project.
import type { Invalidator } from '../../core/invalidation.js';

export const STORE_CHANNELS = { webhooks: 'store.webhooks', domains: 'store.domains', templates: 'store.templates' } as const;

export class ProjectCache<V> {
  private readonly entries = new Map<string, V>();

  constructor(invalidator: Invalidator, channel: string) {
    invalidator.subscribe(channel, (projectId) => this.entries.delete(projectId));
    // While the cross-node bus is down (or was), other nodes' writes may have gone unheard.
    invalidator.onReset(() => this.clear());
  }

  get(projectId: string, load: () => V): V {
    let v = this.entries.get(projectId);
    if (v === undefined) {
      v = load();
      this.entries.set(projectId, v);
    }
    return v;
  }

  clear(): void {
    this.entries.clear();
  }
}
