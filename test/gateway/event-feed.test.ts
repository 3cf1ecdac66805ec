// gateway/event-feed.ts: wakes the Events streams waiting for something after their seq.
import { describe, expect, it } from 'vitest';
import { EventFeed } from '../../gateway/event-feed.js';

const settled = async (p: Promise<void>) => {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
};

describe('EventFeed', () => {
  it('a stream behind the last seq does not wait', async () => {
    const feed = new EventFeed(5);
    expect(await settled(feed.waitAfter(4, new AbortController().signal))).toBe(true);
  });

  it('a stream at the last seq waits for a newer one; an older or equal publish does not wake it', async () => {
    const feed = new EventFeed(5);
    const wait = feed.waitAfter(5, new AbortController().signal);
    feed.published(5);
    feed.published(3);
    expect(await settled(wait)).toBe(false);
    feed.published(6);
    expect(await settled(wait)).toBe(true);
    expect(feed.lastSeq).toBe(6);
  });

  it('wakes every waiter at once, and an aborted wait returns', async () => {
    const feed = new EventFeed(0);
    const a = feed.waitAfter(0, new AbortController().signal);
    const b = feed.waitAfter(0, new AbortController().signal);
    const stop = new AbortController();
    const c = feed.waitAfter(0, stop.signal);
    stop.abort();
    expect(await settled(c)).toBe(true);
    feed.published(1);
    expect([await settled(a), await settled(b)]).toEqual([true, true]);
    const aborted = new AbortController();
    aborted.abort();
    expect(await settled(feed.waitAfter(99, aborted.signal))).toBe(true);
  });
});
