// Pacing as control sees it: the throttles (stored here, pushed to every gateway at
// each change and whenever a gateway's event stream connects, since it may have
// restarted), a project's view of its warm-up (GET /v1/pacing), announced and
// approved bulk volume, and the test-only clock that control shares with its gateways.
import { ApiError, invalid } from '../../core/errors.js';
import { clock, DAY_MS, dayOf, dayStart } from '../../core/clock.js';
import type { Config, ProviderThrottle } from '../../core/config.js';
import type { Logger } from '../../core/log.js';
import type { Project, Store } from '../store/index.js';
import type { Gateway, GatewayClients } from '../delivery/gateways.js';
import { GatewayPush } from '../delivery/gateway-push.js';
import { OTHER, PROVIDERS } from '../../common/providers.js';
import { normFor, warmupDay } from '../../common/warmup.js';

export interface ThrottleView extends ProviderThrottle {
  provider: string;
  /** 'config' while the operator has not set it. */
  source: 'config' | 'operator';
  updatedAt: number | null;
}

export class PacingService {
  private readonly pushes: GatewayPush;

  constructor(
    private readonly store: Store,
    private readonly gateways: GatewayClients,
    private readonly config: Config,
    log: Logger,
    private readonly dispatch: { wake(): void },
  ) {
    this.pushes = new GatewayPush('throttles', log);
  }

  /** Providers a throttle can name: those the gateway recognises, plus any the config adds. */
  providers(): string[] {
    return [...new Set([...PROVIDERS.map((p) => p.name), ...Object.keys(this.config.pacing.providers), OTHER])];
  }

  async throttles(): Promise<ThrottleView[]> {
    const stored = new Map((await this.store.pacing.throttles()).map((t) => [t.provider, t]));
    const defaults = this.config.pacing.providers;
    return this.providers().map((provider) => {
      const s = stored.get(provider);
      if (s)
        return {
          provider,
          dailyNorm: s.dailyNorm,
          growth: s.growth,
          maxDailyNorm: s.maxDailyNorm,
          ratePerMinute: s.ratePerMinute,
          connections: s.connections,
          source: 'operator',
          updatedAt: s.updatedAt,
        };
      const d = defaults[provider] ?? defaults[OTHER]!;
      return { provider, ...d, source: 'config', updatedAt: null };
    });
  }

  /** Changes some numbers of one provider's throttle, stores them and pushes every throttle to every gateway. */
  async setThrottle(provider: string, patch: Partial<ProviderThrottle>): Promise<ThrottleView> {
    if (!this.providers().includes(provider)) throw invalid(`unknown provider ${provider}; one of ${this.providers().join(', ')}`);
    const current = (await this.throttles()).find((t) => t.provider === provider)!;
    const next = { ...current, ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) };
    if (!(next.growth >= 1 && next.growth <= 10)) throw invalid('growth must be between 1 and 10');
    const updatedAt = clock.now();
    await this.store.pacing.setThrottle({
      provider,
      dailyNorm: next.dailyNorm,
      growth: next.growth,
      maxDailyNorm: next.maxDailyNorm,
      ratePerMinute: next.ratePerMinute,
      connections: next.connections,
      updatedAt,
    });
    await Promise.all(this.gateways.list.map((gw) => this.push(gw)));
    return { ...next, source: 'operator', updatedAt };
  }

  /** Sends the throttles (and, under the test clock, the clock) to one gateway, retrying until it takes them. */
  async push(gw: Gateway): Promise<void> {
    await this.pushes.push(gw, async () => {
      const list = (await this.throttles()).map(({ source: _s, updatedAt: _u, ...t }) => t);
      await this.gateways.setThrottles(gw, list);
      if (this.config.testClock && clock.offset()) await this.gateways.setClock(gw, clock.offset());
    });
  }

  /** Test-only (POSTGATE_TEST_CLOCK=1): moves control's clock and every gateway's. */
  async setClockOffset(offsetMs: number): Promise<void> {
    if (!this.config.testClock) throw new ApiError('NOT_FOUND', 'No such route');
    clock.setOffset(offsetMs);
    await Promise.all(this.gateways.list.map((gw) => this.gateways.setClock(gw, offsetMs)));
  }

  /** A project's pacing today: per receiving provider, the warm-up norm, what is used and what remains. */
  async view(project: Project): Promise<Record<string, unknown>> {
    const now = clock.now();
    const day = dayOf(now);
    const first = await this.store.pacing.firstSendAt(project.id);
    const wday = warmupDay(first === null ? 0 : dayStart(first), now);
    const usage = new Map<string, { transactional: number; bulk: number; heldBulk: number }>();
    const unreachable: string[] = [];
    await Promise.all(
      this.gateways.list.map(async (gw) => {
        try {
          for (const p of (await this.gateways.pacingStats(gw, project.id, day)).providers) {
            const u = usage.get(p.provider) ?? { transactional: 0, bulk: 0, heldBulk: 0 };
            u.transactional += Number(p.transactional);
            u.bulk += Number(p.bulk);
            u.heldBulk += Number(p.heldBulk);
            usage.set(p.provider, u);
          }
        } catch {
          unreachable.push(gw.name);
        }
      }),
    );
    const providers = (await this.throttles()).map((t) => {
      const u = usage.get(t.provider) ?? { transactional: 0, bulk: 0, heldBulk: 0 };
      const norm = normFor(t, wday);
      const total = u.transactional + u.bulk;
      return {
        provider: t.provider,
        daily_norm: Number.isFinite(norm) ? norm : null,
        used: { transactional: u.transactional, bulk: u.bulk, total },
        remaining: Number.isFinite(norm) ? Math.max(0, norm - total) : null,
        held_bulk: u.heldBulk,
        rate_per_minute: t.ratePerMinute || null,
        connections: t.connections || null,
      };
    });
    const { factor, floor, days } = this.config.pacing.volumeSpike;
    const v = await this.store.pacing.bulkVolume(project.id, now, days);
    return {
      day,
      warmup_day: wday,
      first_sending_day: first === null ? null : dayOf(first),
      next_day_at: new Date(dayStart(now) + DAY_MS).toISOString(),
      providers,
      bulk_volume: {
        today: v.today,
        daily_average: Math.round(v.average * 10) / 10,
        // Above this, bulk mail is held until announced or approved.
        threshold: Math.max(floor, Math.ceil(factor * v.average), v.allowed),
        announced: v.allowed,
        held_emails: v.held,
        same_subject_daily_limit: this.config.pacing.sameSubjectDailyLimit,
      },
      announcements: (await this.store.pacing.allowances(project.id, day)).map((a) => ({
        day: a.day,
        volume: a.volume,
        source: a.source,
        created_at: new Date(a.createdAt).toISOString(),
      })),
      ...(unreachable.length ? { incomplete: `gateways not answering: ${unreachable.join(', ')}` } : {}),
    };
  }

  /** A project announces a day's bulk volume beforehand (today or later). */
  async announce(
    project: Project,
    forDay: string | undefined,
    volume: number,
  ): Promise<{ day: string; volume: number; source: 'project'; created_at: string }> {
    const today = dayOf(clock.now());
    const d = forDay ?? today;
    if (d < today) throw invalid('day must be today or later: volume is announced beforehand');
    const at = clock.now();
    await this.store.pacing.addAllowance(project.id, d, volume, 'project', at);
    return { day: d, volume, source: 'project', created_at: new Date(at).toISOString() };
  }

  /** The operator approves a project's bulk volume: held mail goes, and the day's allowance rises. */
  async approve(project: Project, forDay: string | undefined, volume: number | undefined): Promise<{ day: string; volume: number; released: number }> {
    const now = clock.now();
    const d = forDay ?? dayOf(now);
    const v = await this.store.pacing.bulkVolume(project.id, now, this.config.pacing.volumeSpike.days);
    const allowed = volume ?? Math.max(v.today, v.allowed);
    await this.store.pacing.addAllowance(project.id, d, allowed, 'operator', now);
    const released = await this.store.pacing.releaseHeld(project.id);
    if (released) this.dispatch.wake();
    return { day: d, volume: allowed, released };
  }
}
