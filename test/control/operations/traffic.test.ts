import { afterEach, describe, expect, it } from 'vitest';
import { clock } from '../../../core/clock.js';
import { AcceptedTraffic, sumTraffic } from '../../../control/operations/traffic.js';

const at = (iso: string) => Date.parse(iso);
const moveTo = (ms: number) => clock.setOffset(ms - Date.now());

describe('AcceptedTraffic', () => {
  afterEach(() => clock.setOffset(0));

  it('counts by the minute over the last hour and by the hour over the last day, oldest bucket first', () => {
    const t = new AcceptedTraffic('n1');
    moveTo(at('2030-01-01T10:59:30Z'));
    t.add(2);
    moveTo(at('2030-01-01T11:00:10Z'));
    t.add(1);
    t.add(3);
    const w = t.windows(at('2030-01-01T11:00:20Z'));
    expect(w.node).toBe('n1');
    expect(w.minute.startMs).toBe(at('2030-01-01T10:01:00Z'));
    expect(w.minute.counts).toHaveLength(60);
    expect(w.minute.counts[59]).toBe(4);
    expect(w.minute.counts[58]).toBe(2);
    expect(w.minute.counts.reduce((a, b) => a + b)).toBe(6);
    expect(w.hour.startMs).toBe(at('2029-12-31T12:00:00Z'));
    expect(w.hour.counts[23]).toBe(4);
    expect(w.hour.counts[22]).toBe(2);
  });

  it('clears the buckets that passed: an hour later the minutes are empty, a day later the hours', () => {
    const t = new AcceptedTraffic('n1');
    moveTo(at('2030-01-01T10:00:00Z'));
    t.add(5);
    const hourLater = t.windows(at('2030-01-01T11:00:00Z'));
    expect(hourLater.minute.counts.every((n) => n === 0)).toBe(true);
    expect(hourLater.hour.counts[22]).toBe(5);
    moveTo(at('2030-01-01T11:30:00Z'));
    t.add(1);
    expect(t.windows(at('2030-01-01T11:30:00Z')).minute.counts[59]).toBe(1);
    expect(t.windows(at('2030-01-02T11:00:00Z')).hour.counts.every((n) => n === 0)).toBe(true);
    // A clock moved back starts again rather than counting into the wrong buckets.
    moveTo(at('2030-01-01T09:00:00Z'));
    t.add(1);
    const back = t.windows(at('2030-01-01T09:00:00Z'));
    expect(back.minute.counts.reduce((a, b) => a + b)).toBe(1);
    expect(back.hour.counts.reduce((a, b) => a + b)).toBe(1);
  });

  it("adds several controls' windows by time", () => {
    const a = new AcceptedTraffic('a');
    const b = new AcceptedTraffic('b');
    moveTo(at('2030-01-01T10:00:30Z'));
    a.add(1);
    b.add(2);
    moveTo(at('2030-01-01T10:01:30Z'));
    a.add(4);
    const now = at('2030-01-01T10:01:40Z');
    // b published a minute ago: its windows end a minute earlier.
    const sum = sumTraffic([a.windows(now), b.windows(at('2030-01-01T10:00:40Z'))], now);
    expect(sum.minute.counts.slice(-2)).toEqual([3, 4]);
    expect(sum.hour.counts[23]).toBe(7);
  });
});
