// core/when.ts: Resend's plain-language times read against a fixed now, zones and DST included.
import { describe, expect, it } from 'vitest';
import { parseWhen, WHEN_EXAMPLES } from '../../core/when.js';

// Friday 6 March 2026, 14:20:30.5 UTC (09:20 in New York, EST); the US moves to EDT on Sunday 8 March.
const now = Date.parse('2026-03-06T14:20:30.500Z');
const at = (text: string) => {
  const ms = parseWhen(text, now);
  return ms === undefined ? undefined : new Date(ms).toISOString();
};

describe('parseWhen', () => {
  it('reads "in <n> <unit>" and "<n> <unit> from now" as that long after now', () => {
    expect(parseWhen('in 1 min', now)).toBe(now + 60_000);
    expect(parseWhen('in 2 hours', now)).toBe(now + 7_200_000);
    expect(parseWhen('In 5   Mins', now)).toBe(now + 300_000);
    expect(parseWhen('in an hour', now)).toBe(now + 3_600_000);
    expect(parseWhen('in 1 hour 30 minutes', now)).toBe(now + 5_400_000);
    expect(parseWhen('in 1 hour and 30 minutes', now)).toBe(now + 5_400_000);
    expect(parseWhen('in 2h, 5m', now)).toBe(now + 7_500_000);
    expect(parseWhen('90 seconds from now', now)).toBe(now + 90_000);
    expect(parseWhen('in 3 days', now)).toBe(now + 3 * 86_400_000);
    expect(parseWhen('in 1 week', now)).toBe(now + 7 * 86_400_000);
    expect(parseWhen('now', now)).toBe(now);
  });

  it('reads a day and a time, in UTC unless a zone is given', () => {
    expect(at('tomorrow at 9am')).toBe('2026-03-07T09:00:00.000Z');
    expect(at('tomorrow 9:15 pm')).toBe('2026-03-07T21:15:00.000Z');
    expect(at('today at 17:30')).toBe('2026-03-06T17:30:00.000Z');
    expect(at('tomorrow at noon +02:00')).toBe('2026-03-07T10:00:00.000Z');
    expect(at('mon 09:30 utc')).toBe('2026-03-09T09:30:00.000Z');
    // Without a time: the time of day it is now.
    expect(parseWhen('tomorrow', now)).toBe(now + 86_400_000);
  });

  it('reads a weekday as the next one, today while the time is ahead; "next" is never today', () => {
    expect(at('Friday at 3pm ET')).toBe('2026-03-06T20:00:00.000Z');
    // 9am in New York has passed today: next week's Friday, by then on EDT.
    expect(at('friday at 9am ET')).toBe('2026-03-13T13:00:00.000Z');
    expect(at('next friday at 3pm ET')).toBe('2026-03-13T19:00:00.000Z');
    expect(at('saturday 11pm PST')).toBe('2026-03-08T07:00:00.000Z');
    expect(at('next monday at 09:30 Europe/Berlin')).toBe('2026-03-09T08:30:00.000Z');
    expect(at('thursday at 8am UTC')).toBe('2026-03-12T08:00:00.000Z');
  });

  it("reads the day on the zone's calendar, and follows its daylight saving time", () => {
    // In UTC+12 it is already Saturday 02:20: "today" is Saturday there.
    expect(at('today at 9am UTC+12')).toBe('2026-03-06T21:00:00.000Z');
    // Monday in New York is on EDT (UTC-4) while today is on EST (UTC-5).
    expect(at('monday at 9am ET')).toBe('2026-03-09T13:00:00.000Z');
    expect(at('monday at 9am EST')).toBe('2026-03-09T14:00:00.000Z');
    expect(at('tomorrow at 9am america/new_york')).toBe('2026-03-07T14:00:00.000Z');
  });

  it('gives undefined for anything else', () => {
    for (const text of [
      '',
      'tomorrow at 25pm',
      'tomorrow at 9',
      'friday at 13pm',
      'friday at 10:75',
      'someday',
      'yesterday',
      'next week',
      'at 9am',
      'in',
      'in 3 fortnights',
      'in -1 min',
      'tomorrow at 9am Mars/Olympus',
      'tomorrow at 9am UTC+15',
      'in 1 min; drop table emails',
      '2026-12-01T09:00:00Z',
    ])
      expect(parseWhen(text, now), text).toBeUndefined();
  });

  it('reads every example the refusal message shows', () => {
    for (const text of WHEN_EXAMPLES) expect(parseWhen(text, now), text).toBeGreaterThan(now);
  });
});
