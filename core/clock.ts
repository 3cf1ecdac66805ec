// The one clock. Tests move it (through the admin API) to reach expiry,
// next-day deferral and warm-up days without waiting.
let offsetMs = 0;

export const clock = {
  now(): number {
    return Date.now() + offsetMs;
  },
  date(): Date {
    return new Date(clock.now());
  },
  iso(ms: number = clock.now()): string {
    return new Date(ms).toISOString();
  },
  /** UTC day, YYYY-MM-DD. */
  day(ms: number = clock.now()): string {
    return new Date(ms).toISOString().slice(0, 10);
  },
  setOffset(ms: number): void {
    offsetMs = ms;
  },
  offset(): number {
    return offsetMs;
  },
};
