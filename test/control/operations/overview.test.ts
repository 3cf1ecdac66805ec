import { describe, expect, it } from 'vitest';
import { type DeliverySnapshot, noProject, noProvider, noSeries, type Outcomes, type ProviderFigures } from '../../../common/delivery-state.js';
import type { AlertSettings } from '../../../core/config.js';
import { assembleOverview, type OverviewInput, projectHours, queueAgeAlert, rateAlerts } from '../../../control/operations/overview.js';
import { AcceptedTraffic } from '../../../control/operations/traffic.js';

const ALERTS: AlertSettings = {
  bounceRate: 0.05,
  bounceRateCritical: 0.1,
  complaintRate: 0.001,
  complaintRateCritical: 0.003,
  queueAgeMinutes: 60,
  minOutcomes: 50,
};
const NOW = Date.UTC(2030, 0, 1, 12, 30, 15);
const hour = (o: Partial<Outcomes>): Outcomes => ({ delivered: 0, deferred: 0, bounced: 0, complained: 0, ...o });

describe('rateAlerts', () => {
  const who = { project: 'acme', provider: null };

  it('judges nothing under the minimum of final answers', () => {
    expect(rateAlerts(hour({ delivered: 20, bounced: 29 }), who, ALERTS)).toEqual([]);
  });

  it('warns at the warning rate and is critical at the critical one', () => {
    const warn = rateAlerts(hour({ delivered: 94, bounced: 6 }), who, ALERTS);
    expect(warn).toEqual([
      expect.objectContaining({ kind: 'bounce_rate', severity: 'warning', project: 'acme', provider: null, value: 0.06, threshold: 0.05 }),
    ]);
    expect(warn[0]?.message).toBe('Project acme: 6 % of 100 messages bounced in the last hour (threshold 5 %)');
    expect(rateAlerts(hour({ delivered: 88, bounced: 12 }), who, ALERTS)[0]).toMatchObject({ severity: 'critical', threshold: 0.1 });
    expect(rateAlerts(hour({ delivered: 96, bounced: 4 }), who, ALERTS)).toEqual([]);
  });

  it('counts complaints against the delivered', () => {
    const out = rateAlerts(hour({ delivered: 1000, complained: 2 }), { project: null, provider: 'google' }, ALERTS);
    expect(out).toEqual([expect.objectContaining({ kind: 'complaint_rate', severity: 'warning', provider: 'google', value: 0.002 })]);
    expect(rateAlerts(hour({ delivered: 1000, complained: 3 }), who, ALERTS)[0]).toMatchObject({ severity: 'critical' });
  });
});

describe('queueAgeAlert', () => {
  it('warns past the threshold and is critical past four times it', () => {
    expect(queueAgeAlert('google', 0, NOW, ALERTS)).toBeUndefined();
    expect(queueAgeAlert('google', NOW - 59 * 60_000, NOW, ALERTS)).toBeUndefined();
    expect(queueAgeAlert('google', NOW - 61 * 60_000, NOW, ALERTS)).toMatchObject({ kind: 'queue_age', severity: 'warning', value: 61, threshold: 60 });
    expect(queueAgeAlert('google', NOW - 241 * 60_000, NOW, ALERTS)).toMatchObject({ severity: 'critical', threshold: 240 });
  });
});

describe('assembleOverview', () => {
  const provider = (name: string, over: Partial<ProviderFigures> = {}): ProviderFigures => ({ ...noProvider(name), ...over });

  function input(over: Partial<OverviewInput> = {}): OverviewInput {
    const series = noSeries(NOW);
    series.minute.delivered[59] = 7;
    series.hour.bounced[23] = 3;
    const google = provider('google', {
      queue: { ready: 2, inFlight: 1, deferred: { receiver: 3, network: 0, pacing: 1, volume: 0, shaping: 0, suspended: 0 }, held: 0 },
      oldestAcceptedMs: NOW - 90 * 60_000,
      actions: [
        {
          rule: 'gmail-421',
          provider: 'google',
          projectId: 'p1',
          action: 'rate',
          value: 30,
          sinceMs: NOW - 1000,
          untilMs: NOW + 60_000,
          trigger: '421 4.7.28',
        },
      ],
    });
    const yahoo = provider('yahoo', {
      windows: { last5m: hour({}), lastHour: hour({ delivered: 40, bounced: 10 }), lastDay: hour({}) },
      projects: [{ ...noProject('p1'), windows: { last5m: hour({}), lastHour: hour({ delivered: 40, bounced: 10 }), lastDay: hour({}) } }],
      queue: { ready: 1, inFlight: 0, deferred: { receiver: 0, network: 2, pacing: 0, volume: 0, shaping: 0, suspended: 0 }, held: 0 },
      oldestAcceptedMs: NOW - 5 * 60_000,
    });
    const snapshots: DeliverySnapshot[] = [
      { node: 'b', atMs: NOW, providers: [google], series },
      { node: 'a', atMs: NOW, providers: [yahoo] },
    ];
    const traffic = new AcceptedTraffic('c1');
    return {
      now: NOW,
      snapshots,
      unreachable: ['gw2'],
      accepted: [{ ...traffic.windows(NOW), minute: { startMs: series.minute.startMs, counts: [...new Array(59).fill(0), 9] } }],
      held: 4,
      scheduled: 5,
      suspensions: [
        { id: 'sus_1', provider: 'microsoft', project: null, until: null, reason: 'maintenance', created_at: new Date(NOW).toISOString() },
        { id: 'sus_2', provider: 'google', project: 'acme', until: null, reason: '', created_at: new Date(NOW).toISOString() },
        { id: 'sus_3', provider: null, project: 'acme', until: null, reason: '', created_at: new Date(NOW).toISOString() },
      ],
      alerts: ALERTS,
      slug: (id) => (id === 'p1' ? 'acme' : id),
      ...over,
    };
  }

  it('sums the series, the queue and its oldest message, and lists the providers suspended or shaped', () => {
    const o = assembleOverview(input());
    expect(o.at).toBe(new Date(NOW).toISOString());
    expect(o.nodes).toEqual(['a', 'b']);
    expect(o.series.minute).toMatchObject({ start: new Date(Date.UTC(2030, 0, 1, 11, 31)).toISOString(), step_s: 60 });
    expect(o.series.minute.accepted[59]).toBe(9);
    expect(o.series.minute.delivered[59]).toBe(7);
    expect(o.series.hour.bounced[23]).toBe(3);
    expect(o.series.hour.accepted).toHaveLength(24);
    expect(o.queue).toEqual({
      ready: 3,
      in_flight: 1,
      deferred: { receiver: 3, network: 2, pacing: 1, volume: 0, shaping: 0, suspended: 0 },
      held: 4,
      scheduled: 5,
      oldest_at: new Date(NOW - 90 * 60_000).toISOString(),
    });
    expect(o.providers).toEqual([
      {
        provider: 'google',
        suspended: false,
        shaped: true,
        actions: [
          {
            rule: 'gmail-421',
            action: 'rate',
            value: 30,
            project: 'acme',
            since: new Date(NOW - 1000).toISOString(),
            until: new Date(NOW + 60_000).toISOString(),
            trigger: '421 4.7.28',
          },
        ],
        suspensions: [{ id: 'sus_2', provider: 'google', project: 'acme', reason: '', until: null }],
      },
      {
        provider: 'microsoft',
        suspended: true,
        shaped: false,
        actions: [],
        suspensions: [{ id: 'sus_1', provider: 'microsoft', project: null, reason: 'maintenance', until: null }],
      },
    ]);
  });

  it('raises the alerts: critical first (an unreachable gateway, a 20 % bounce rate), then warnings (the queue age)', () => {
    const o = assembleOverview(input());
    expect(o.alerts.map((a) => [a.kind, a.severity, a.project, a.provider])).toEqual([
      ['gateway_unreachable', 'critical', null, null],
      ['bounce_rate', 'critical', null, 'yahoo'],
      ['bounce_rate', 'critical', 'acme', null],
      ['queue_age', 'warning', null, 'google'],
    ]);
    expect(o.alerts[0]?.message).toContain('gw2');
    expect(assembleOverview(input({ unreachable: [], alerts: { ...ALERTS, queueAgeMinutes: 120, bounceRate: 0.3, bounceRateCritical: 0.5 } })).alerts).toEqual(
      [],
    );
  });
});

describe('projectHours', () => {
  it("adds a summary's projects and a full snapshot's (an older gateway, another node's) by project", () => {
    const full = {
      ...noProvider('yahoo'),
      projects: [{ ...noProject('p1'), windows: { last5m: hour({}), lastHour: hour({ delivered: 4, bounced: 1 }), lastDay: hour({}) } }],
    };
    const out = projectHours([
      {
        node: 'a',
        atMs: NOW,
        providers: [noProvider('google')],
        projectsHour: [
          { projectId: 'p1', lastHour: hour({ delivered: 10 }) },
          { projectId: '', lastHour: hour({ delivered: 1 }) },
        ],
      },
      { node: 'b', atMs: NOW, providers: [full] },
    ]);
    expect([...out]).toEqual([['p1', hour({ delivered: 14, bounced: 1 })]]);
  });
});
