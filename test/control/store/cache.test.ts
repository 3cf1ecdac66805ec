// control/store/cache.ts: a store's per-project cache, dropped for a project when any node
// publishes a change to it, and emptied when invalidations may have been missed.
import { expect, it } from 'vitest';
import { ProjectCache } from '../../../control/store/cache.js';
import { localInvalidator, type Invalidator } from '../../../core/invalidation.js';

it('loads once per project until the project’s id is published on its channel', () => {
  const bus = localInvalidator();
  const cache = new ProjectCache<string[]>(bus, 'store.webhooks');
  let loads = 0;
  const load = () => {
    loads++;
    return [`v${loads}`];
  };
  expect(cache.get('p1', load)).toEqual(['v1']);
  expect(cache.get('p1', load)).toEqual(['v1']);
  expect(cache.get('p2', load)).toEqual(['v2']);
  bus.publish('store.domains', 'p1');
  expect(cache.get('p1', load)).toEqual(['v1']);
  bus.publish('store.webhooks', 'p1');
  expect(cache.get('p1', load)).toEqual(['v3']);
  expect(cache.get('p2', load)).toEqual(['v2']);
});

it('a reset (the bus may have missed something) empties it', () => {
  let reset = () => {};
  const bus: Invalidator = { ...localInvalidator(), onReset: (fn) => void (reset = fn) };
  const cache = new ProjectCache<number>(bus, 'c');
  let n = 0;
  cache.get('p', () => ++n);
  reset();
  expect(cache.get('p', () => ++n)).toBe(2);
  cache.clear();
  expect(cache.get('p', () => ++n)).toBe(3);
});
