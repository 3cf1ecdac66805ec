// gateway/retry.ts: how often rejected mail is tried again.
import { expect, it } from 'vitest';
import { rejectRetryDelay } from '../../gateway/retry.js';

it('rejected mail is retried a fixed number of times', () => {
  expect([1, 2, 3, 4].map((n) => rejectRetryDelay([60, 600, 3600], n))).toEqual([60, 600, 3600, undefined]);
});
