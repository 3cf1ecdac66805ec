// The emails control accepted, by the minute over the last hour and by the hour over the last day,
// for the console's overview (the gateways count what became of them: gateway/state). Counted where
// the mail pipeline accepts an email, as an increment of a fixed array: nothing allocates on that path.
// Kept in this process's memory only: a restart of control starts the windows again (the gateways'
// windows are saved and survive theirs). On a cluster each control publishes its windows to Redis
// under its own key with a short TTL, as the gateways publish their state (gateway/state/publish.ts),
// and the overview adds the other nodes' to its own; a node that stopped drops out by itself.
import crypto from 'node:crypto';
import { clock } from '../../core/clock.js';
import type { Logger } from '../../core/log.js';
import { publishNodeValue, readNodeValues, type RedisLink } from '../../core/redis.js';
import { addBuckets, HOUR_MS, MINUTE_MS, SERIES, seriesStart } from '../../common/delivery-state.js';

export const TRAFFIC_KEY_PREFIX = 'accepted-traffic:';
const PUBLISH_EVERY_MS = 5_000;
const TRAFFIC_TTL_MS = 15_000;

/** Counts per bucket, oldest first; the last bucket holds the current minute (hour). */
export interface CountSeries {
  startMs: number;
  counts: number[];
}

export interface AcceptedWindows {
  node: string;
  minute: CountSeries;
  hour: CountSeries;
}

export class AcceptedTraffic {
  private readonly minutes = new Array<number>(SERIES.minute.buckets).fill(0);
  private readonly hours = new Array<number>(SERIES.hour.buckets).fill(0);
  /** The minute and hour (epoch minutes, hours) the arrays end with. */
  private minute = 0;
  private hour = 0;

  /** This control's name among the cluster's (random per process: its windows start again at a restart anyway). */
  constructor(readonly node: string = crypto.randomUUID()) {}

  /** `n` emails accepted now. */
  add(n = 1): void {
    const now = clock.now();
    if (Math.floor(now / MINUTE_MS) !== this.minute) this.roll(now);
    this.minutes[this.minute % 60]! += n;
    this.hours[this.hour % 24]! += n;
  }

  /** Moves the arrays' end to now, clearing the buckets that passed (all of them after a long pause, or a clock moved back). */
  private roll(now: number): void {
    const clear = (a: number[], from: number, to: number) => {
      if (to < from || to - from >= a.length) a.fill(0);
      else for (let i = from + 1; i <= to; i++) a[i % a.length] = 0;
    };
    const m = Math.floor(now / MINUTE_MS);
    const h = Math.floor(now / HOUR_MS);
    clear(this.minutes, this.minute, m);
    if (h !== this.hour) clear(this.hours, this.hour, h);
    this.minute = m;
    this.hour = h;
  }

  /** The windows ending with the minute (hour) of now. */
  windows(now = clock.now()): AcceptedWindows {
    if (Math.floor(now / MINUTE_MS) !== this.minute) this.roll(now);
    const out = (a: number[], end: number, stepMs: number, buckets: number): CountSeries => ({
      startMs: seriesStart(now, stepMs, buckets),
      counts: Array.from({ length: buckets }, (_, i) => a[(end - buckets + 1 + i) % buckets]!),
    });
    return {
      node: this.node,
      minute: out(this.minutes, this.minute, MINUTE_MS, SERIES.minute.buckets),
      hour: out(this.hours, this.hour, HOUR_MS, SERIES.hour.buckets),
    };
  }
}

/** Several nodes' windows added by time, ending with the minute (hour) of now. */
export function sumTraffic(all: readonly AcceptedWindows[], now: number): { minute: CountSeries; hour: CountSeries } {
  const of = (stepMs: number, buckets: number): CountSeries => ({ startMs: seriesStart(now, stepMs, buckets), counts: new Array<number>(buckets).fill(0) });
  const out = { minute: of(MINUTE_MS, SERIES.minute.buckets), hour: of(HOUR_MS, SERIES.hour.buckets) };
  for (const w of all) {
    addBuckets(out.minute.counts, out.minute.startMs, w.minute?.counts ?? [], w.minute?.startMs ?? 0, MINUTE_MS);
    addBuckets(out.hour.counts, out.hour.startMs, w.hour?.counts ?? [], w.hour?.startMs ?? 0, HOUR_MS);
  }
  return out;
}

/** Publishes this control's windows every few seconds under its own expiring key. */
export const publishTraffic = (redis: RedisLink, traffic: AcceptedTraffic, log: Logger): (() => void) =>
  publishNodeValue(
    redis,
    { name: `${TRAFFIC_KEY_PREFIX}${traffic.node}`, everyMs: PUBLISH_EVERY_MS, ttlMs: TRAFFIC_TTL_MS, what: 'the accepted counts' },
    () => traffic.windows(),
    log,
  );

/** Every control's published windows (this one's among them). */
export const readTraffic = (redis: RedisLink): Promise<AcceptedWindows[]> => readNodeValues<AcceptedWindows>(redis, TRAFFIC_KEY_PREFIX);
