// core/event-loop-load.ts: the share of time the event loop was busy over the last window, read
// when asked.
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { eventLoopLoad } from '../../core/event-loop-load.js';

const spin = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

it('near 1 after a window of busy work, near 0 after a window of waiting; unchanged within a window', async () => {
  const load = eventLoopLoad(100);
  expect(load()).toBe(0);
  spin(150);
  const busy = load();
  expect(busy).toBeGreaterThan(0.8);
  // Read again within the window: the same figure, not a new measurement.
  expect(load()).toBe(busy);
  await sleep(150);
  expect(load()).toBeLessThan(0.3);
});
