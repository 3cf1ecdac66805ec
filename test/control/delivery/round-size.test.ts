// How many emails a dispatch round reads (control/delivery/dispatcher.ts): about 1 MB of requests,
// bodies included, so a backlog of large emails is handed over in bounded rounds (control's and the
// gateway's peak memory with 20 kB bodies: 246-253 -> 214-218 MB, bench:deliverability).
import { describe, expect, it } from 'vitest';
import { roundSize } from '../../../control/delivery/dispatcher.js';

describe('roundSize', () => {
  it('reads 200 small emails, fewer large ones, and never fewer than 20', () => {
    expect(roundSize(0)).toBe(200); // nothing read yet
    expect(roundSize(300)).toBe(200);
    expect(roundSize(20_000)).toBe(52);
    expect(roundSize(100_000)).toBe(20);
    expect(roundSize(5_000_000)).toBe(20);
  });
});
