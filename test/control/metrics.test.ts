// control/metrics.ts: control's own families, declared once with what main.ts hands in: the event
// loop and the store read at each scrape (commits and writes as counters on either backend), memory,
// the per-project cap counter (a slug, never an address), the admin guard's refusals at 0 per reason.
import { expect, it } from 'vitest';
import { Registry } from '../../core/metrics.js';
import { adminRefused, controlMetrics } from '../../control/metrics.js';
import { expositionProblems, parseExposition } from '../helpers/prometheus.js';

it("declares control's families, read at each scrape", async () => {
  const r = new Registry();
  const stats = { commits: 2, writes: 5 };
  const m = controlMetrics(r, {
    loopLoad: () => 0.25,
    storeStats: () => stats,
    heldByProject: async () => [{ held: 3 }, { held: 4 }],
    trackingHits: () => ({ recorded: 12, dropped: 1 }),
  });
  expect(adminRefused(r)).toBe(adminRefused(r));
  m.dispatched.inc(3);
  m.codeSendsCapped.with({ project: 'acme' }).inc();
  expect(() => m.codeSendsCapped.with({ project: 'a@b.test' })).toThrow();
  stats.commits = 4;
  const text = await r.scrape();
  expect(expositionProblems(await parseExposition(text))).toEqual([]);
  for (const line of [
    'postgate_event_loop_utilization 0.25',
    'postgate_store_commits_total 4',
    'postgate_store_writes_total 5',
    'postgate_emails_dispatched_total 3',
    'postgate_delivery_events_total 0',
    'postgate_auth_code_sends_capped_total{project="acme"} 1',
    'postgate_admin_refused_total{reason="token"} 0',
    'postgate_admin_refused_total{reason="throttled"} 0',
    'postgate_held_emails 7',
    'postgate_tracking_hits_recorded_total 12',
    'postgate_tracking_hits_dropped_total 1',
  ])
    expect(text).toContain(`${line}\n`);
  expect(text).toMatch(/^postgate_process_rss_bytes [1-9]\d*$/m);
});
