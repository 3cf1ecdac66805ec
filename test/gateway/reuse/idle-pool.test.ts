import { afterEach, describe, expect, it, vi } from 'vitest';
import { IdlePool } from '../../../gateway/reuse/idle-pool.js';

afterEach(() => vi.useRealTimers());

describe('IdlePool', () => {
  it('hands out the newest idle connection of a route that the caller accepts', () => {
    const pool = new IdlePool<string>(1000, () => {});
    pool.put('a1', 'mx-a', 'g');
    pool.put('a2', 'mx-a', 'g');
    pool.put('b1', 'mx-b', 'g');
    expect(pool.take('mx-a', () => true)).toBe('a2');
    expect(pool.take('mx-a', (c) => c !== 'a1')).toBeUndefined();
    expect(pool.take('mx-c', () => true)).toBeUndefined();
    expect(pool.take('mx-a', () => true)).toBe('a1');
    expect(pool.size).toBe(1);
    expect(pool.idleAt('g')).toBe(1);
  });

  it('gives a connection up when its idle time runs out, not before', () => {
    vi.useFakeTimers();
    const expired: string[] = [];
    const pool = new IdlePool<string>(5000, (c) => expired.push(c));
    pool.put('a', 'mx', 'g');
    vi.advanceTimersByTime(4000);
    pool.put('b', 'mx', 'g');
    vi.advanceTimersByTime(1000);
    expect(expired).toEqual(['a']);
    expect(pool.take('mx', () => true)).toBe('b');
    vi.advanceTimersByTime(10_000);
    // A taken connection's timer no longer runs.
    expect(expired).toEqual(['a']);
    expect(pool.size).toBe(0);
  });

  it('counts idle connections per gate and trims a gate oldest first', () => {
    const pool = new IdlePool<string>(1000, () => {});
    pool.put('g1-old', 'mx-1', 'gmail');
    pool.put('o1', 'mx-9', 'other:x.test');
    pool.put('g2', 'mx-2', 'gmail');
    pool.put('g3-new', 'mx-1', 'gmail');
    expect(pool.idleAt('gmail')).toBe(3);
    expect(pool.trim('gmail', 1)).toEqual(['g1-old', 'g2']);
    expect(pool.idleAt('gmail')).toBe(1);
    expect(pool.idleAt('other:x.test')).toBe(1);
    // Below zero room (a limit lowered under the attempts running): none kept.
    expect(pool.trim('gmail', -2)).toEqual(['g3-new']);
    expect(pool.idleAt('gmail')).toBe(0);
    expect(pool.remove('g3-new')).toBe(false);
    expect(pool.clear()).toEqual(['o1']);
    expect(pool.size).toBe(0);
  });
});
