// Times written in words, as Resend's `scheduled_at` takes them beside ISO 8601 ("in 1 min", "tomorrow
// at 9am", "Friday at 3pm ET"): a small grammar read against a given instant (the one clock's now, so
// tests that move the clock move these too). Pure: no clock, no I/O.
//
//   now
//   in <n> <unit> [<n> <unit>…]      units: s/sec/second(s), m/min/minute(s), h/hr/hour(s), d/day(s), w/week(s);
//   <n> <unit> from now              <n> is digits, or "a"/"an" ("in an hour"); parts may be joined by "and"
//   <day> [[at] <time>] [<zone>]     day: today, tomorrow, a weekday (mon…sun, in full or not), next <weekday>
//
// A weekday is the next such day, today included while the time is still ahead; "next friday" is never today.
// Time: 9am, 9:30 pm, 15:00, noon, midnight; without one, the time of day it is now. Zone: UTC unless given,
// as UTC, GMT, Z, +02:00, UTC+2, an abbreviation of a North American or European zone (ET, PST, CET…) or an
// IANA name (Europe/Berlin); a day and a time are read on that zone's calendar and clock, DST included.

/** Examples of every form, for the message that refuses anything else. */
export const WHEN_EXAMPLES = ['in 1 min', 'in 2 hours', 'in 1 hour 30 minutes', 'tomorrow at 9am', 'friday at 3pm ET', 'next monday at 09:30 Europe/Berlin'];

const UNIT_MS: Record<string, number> = {};
for (const [ms, names] of [
  [1_000, ['s', 'sec', 'secs', 'second', 'seconds']],
  [60_000, ['m', 'min', 'mins', 'minute', 'minutes']],
  [3_600_000, ['h', 'hr', 'hrs', 'hour', 'hours']],
  [86_400_000, ['d', 'day', 'days']],
  [604_800_000, ['w', 'wk', 'wks', 'week', 'weeks']],
] as const)
  for (const n of names) UNIT_MS[n] = ms;

const WEEKDAYS: Record<string, number> = {};
for (const [day, names] of [
  [0, ['sunday', 'sun']],
  [1, ['monday', 'mon']],
  [2, ['tuesday', 'tue', 'tues']],
  [3, ['wednesday', 'wed']],
  [4, ['thursday', 'thu', 'thur', 'thurs']],
  [5, ['friday', 'fri']],
  [6, ['saturday', 'sat']],
] as const)
  for (const n of names) WEEKDAYS[n] = day;

/** Abbreviations: a generic name follows its zone's daylight saving time; a standard or daylight one is fixed. */
const ZONES: Record<string, string | number> = {
  utc: 0,
  gmt: 0,
  z: 0,
  et: 'America/New_York',
  est: -300,
  edt: -240,
  ct: 'America/Chicago',
  cst: -360,
  cdt: -300,
  mt: 'America/Denver',
  mst: -420,
  mdt: -360,
  pt: 'America/Los_Angeles',
  pst: -480,
  pdt: -420,
  akt: 'America/Anchorage',
  hst: -600,
  wet: 0,
  west: 60,
  bst: 60,
  cet: 60,
  cest: 120,
  eet: 120,
  eest: 180,
  msk: 180,
};

/** A zone: minutes east of UTC, or an IANA name. */
type Zone = number | string;

function zoneOf(text: string | undefined): Zone | undefined {
  if (text === undefined) return 0;
  const known = ZONES[text];
  if (known !== undefined) return known;
  const offset = /^(?:utc|gmt)?([+-])(\d{1,2})(?::?(\d{2}))?$/.exec(text);
  if (offset) {
    const minutes = Number(offset[2]) * 60 + Number(offset[3] ?? 0);
    return minutes > 14 * 60 ? undefined : offset[1] === '-' ? -minutes : minutes;
  }
  if (!/^[a-z]+(?:\/[a-z0-9_+-]+)+$/.test(text)) return undefined;
  try {
    // Intl knows the IANA names (any case) and refuses the others.
    return new Intl.DateTimeFormat('en-US', { timeZone: text }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** Minutes east of UTC that `zone`'s clocks show at the instant `ms`. */
function offsetAt(zone: Zone, ms: number): number {
  if (typeof zone === 'number') return zone;
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(zone, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(ms)).map((x) => [x.type, Number(x.value)]));
  const wall = Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!);
  return Math.round((wall - (ms - (((ms % 1000) + 1000) % 1000))) / 60_000);
}

/** The instant `zone`'s clocks show the wall time `wall` (a UTC-based ms of that reading); across a DST change, the later reading. */
function instantOf(zone: Zone, wall: number): number {
  const first = wall - offsetAt(zone, wall) * 60_000;
  return wall - offsetAt(zone, first) * 60_000;
}

/** "9am", "9:30 pm", "15:00", "noon", "midnight" → minutes after midnight. */
function timeOf(text: string): number | undefined {
  if (text === 'noon') return 12 * 60;
  if (text === 'midnight') return 0;
  const m = /^(\d{1,2})(?::(\d{2}))?\s*(am|pm)?$/.exec(text);
  if (!m) return undefined;
  let h = Number(m[1]);
  const min = Number(m[2] ?? 0);
  if (min > 59) return undefined;
  if (m[3]) {
    if (h < 1 || h > 12) return undefined;
    h = (h % 12) + (m[3] === 'pm' ? 12 : 0);
  } else if (m[2] === undefined || h > 23) return undefined; // a bare "9" is no time
  return h * 60 + min;
}

function relative(text: string): number | undefined {
  const parts = text.split(/\s*(?:,|\band\b)\s*|\s+(?=\d|an?\b)/).filter(Boolean);
  if (!parts.length) return undefined;
  let total = 0;
  for (const part of parts) {
    const m = /^(\d{1,6}|an?)\s*([a-z]+)$/.exec(part);
    const unit = m ? UNIT_MS[m[2]!] : undefined;
    if (!m || unit === undefined) return undefined;
    total += (m[1] === 'a' || m[1] === 'an' ? 1 : Number(m[1])) * unit;
  }
  return total;
}

/** The instant `text` names, read at `now` (epoch ms); undefined when it is none of the forms above. */
export function parseWhen(text: string, now: number): number | undefined {
  const t = text.trim().toLowerCase().replace(/\s+/g, ' ').replace(/\.$/, '');
  if (t === 'now') return now;
  const ahead = /^in (.+)$/.exec(t)?.[1] ?? /^(.+) from now$/.exec(t)?.[1];
  if (ahead !== undefined) {
    const ms = relative(ahead);
    return ms === undefined ? undefined : now + ms;
  }
  const m = /^(today|tomorrow|(next |this )?([a-z]+))(?: (?:at )?([0-9: ]+(?:am|pm)?|noon|midnight))?(?: ([a-z_/+:0-9-]+))?$/.exec(t);
  if (!m) return undefined;
  const zone = zoneOf(m[5]);
  if (zone === undefined) return undefined;
  const weekday = m[3] === undefined ? undefined : WEEKDAYS[m[3]];
  if (m[3] !== undefined && weekday === undefined) return undefined;
  // Today's date and time of day on the zone's calendar and clock.
  const local = new Date(now + offsetAt(zone, now) * 60_000);
  const minuteOfDay = local.getUTCHours() * 60 + local.getUTCMinutes();
  const time = m[4] === undefined ? minuteOfDay : timeOf(m[4].trim());
  if (time === undefined) return undefined;
  let days = m[1] === 'tomorrow' ? 1 : 0;
  if (weekday !== undefined) {
    days = (weekday - local.getUTCDay() + 7) % 7;
    // Today only while the time is still ahead, and never for "next".
    if (days === 0 && (m[2] === 'next ' || time * 60_000 <= minuteOfDay * 60_000 + local.getUTCSeconds() * 1000)) days = 7;
  }
  const wall = Date.UTC(local.getUTCFullYear(), local.getUTCMonth(), local.getUTCDate() + days) + time * 60_000;
  // Without a time the reading keeps now's seconds, so "tomorrow" is exactly a day of that clock ahead.
  return instantOf(zone, wall + (m[4] === undefined ? local.getUTCSeconds() * 1000 + local.getUTCMilliseconds() : 0));
}
