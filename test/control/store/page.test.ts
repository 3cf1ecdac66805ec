// control/store/page.ts: limit + 1 rows say whether more lie in the direction of travel; a page read
// backwards comes out in list order.
import { describe, expect, it } from 'vitest';
import { pageOf } from '../../../control/store/page.js';

const double = (n: number) => n * 2;

describe('pageOf', () => {
  it('keeps limit rows and says more follow when limit + 1 were read', () => {
    expect(pageOf([1, 2, 3, 4], 3, false, double)).toEqual({ items: [2, 4, 6], hasMore: true });
  });

  it('says no more follow when at most limit rows were read', () => {
    expect(pageOf([1, 2, 3], 3, false, double)).toEqual({ items: [2, 4, 6], hasMore: false });
    expect(pageOf([1], 3, false, double)).toEqual({ items: [2], hasMore: false });
    expect(pageOf([], 3, false, double)).toEqual({ items: [], hasMore: false });
  });

  it('turns a backwards page round into list order, the extra row (the farthest back) left out', () => {
    // Read towards the list's start: nearest first, so 5 4 3 and the extra 2.
    expect(pageOf([5, 4, 3, 2], 3, true, (n) => n)).toEqual({ items: [3, 4, 5], hasMore: true });
    expect(pageOf([5, 4], 3, true, (n) => n)).toEqual({ items: [4, 5], hasMore: false });
  });

  it('maps only the rows it keeps, and leaves the input alone', () => {
    const rows = [1, 2, 3];
    const seen: number[] = [];
    pageOf(rows, 2, true, (n) => seen.push(n));
    expect(seen).toEqual([1, 2]);
    expect(rows).toEqual([1, 2, 3]);
  });
});
