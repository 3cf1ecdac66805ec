// control/delivery/gateway-metrics.ts: the gateways' text appended to control's scrape, merged with a
// gateway label each and HELP/TYPE once; a gateway that fails or never answers is cut after a second,
// left out, and postgate_gateway_up says 0 for it (logged once until it answers again).
import { expect, it } from 'vitest';
import { Registry } from '../../../core/metrics.js';
import { GatewayScrape } from '../../../control/delivery/gateway-metrics.js';
import { expositionProblems, parseExposition } from '../../helpers/prometheus.js';

const gatewayText = () => {
  const r = new Registry();
  r.counter('postgate_gateway_attempts_total', 'Attempts', { provider: ['google', 'other'] })
    .with({ provider: 'google' })
    .inc(2);
  return r.render();
};

it('merges the gateways that answer, says which did not, within about a second', async () => {
  let broken = true;
  const warned: unknown[] = [];
  const gateways = {
    list: [{ name: '127.0.0.1:1' }, { name: '127.0.0.1:2' }, { name: '127.0.0.1:3' }] as never,
    metrics: (gw: { name: string }) => {
      if (gw.name.endsWith(':1')) return Promise.resolve(gatewayText());
      if (gw.name.endsWith(':2')) return new Promise<string>(() => {}); // never answers
      return broken ? Promise.reject(new Error('UNAVAILABLE')) : Promise.resolve(gatewayText());
    },
  };
  const m = new GatewayScrape(gateways, { warn: (...a: unknown[]) => warned.push(a) } as never);
  const text = await m.scrape();
  const parsed = await parseExposition(text);
  expect(expositionProblems(parsed)).toEqual([]);
  expect(parsed.postgate_gateway_up!.data).toEqual([
    { labels: { gateway: '127.0.0.1:1' }, value: 1 },
    { labels: { gateway: '127.0.0.1:2' }, value: 0 },
    { labels: { gateway: '127.0.0.1:3' }, value: 0 },
  ]);
  expect(parsed.postgate_gateway_attempts_total!.data).toEqual([
    { labels: { gateway: '127.0.0.1:1', provider: 'google' }, value: 2 },
    { labels: { gateway: '127.0.0.1:1', provider: 'other' }, value: 0 },
  ]);
  expect(warned).toHaveLength(2);
  // Still down: not logged again. Back: merged, one HELP and TYPE for both.
  await m.scrape();
  expect(warned).toHaveLength(2);
  broken = false;
  // Scrapes at the same time share the gateways' calls.
  let calls = 0;
  const metrics = gateways.metrics;
  gateways.metrics = (gw) => {
    calls++;
    return metrics(gw);
  };
  const [again, same] = await Promise.all([m.scrape(), m.scrape()]);
  expect(same).toBe(again);
  expect(calls).toBe(3);
  expect(again.match(/# TYPE postgate_gateway_attempts_total/g)).toHaveLength(1);
  expect((await parseExposition(again)).postgate_gateway_attempts_total!.data).toHaveLength(4);
});
