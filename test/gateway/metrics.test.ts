// gateway/metrics.ts: the gateway's families. Every provider of the list and the config at 0 from the
// start; outcomes counted per recipient by provider and class, deferrals by cause, latency from
// accepted_ms to the 2xx; anything not a known provider (a gate of `other:<domain>`, a domain) counted
// as `other`; busy and idle connections, shaping actions and queue counts read at each scrape.
import { afterEach, describe, expect, it } from 'vitest';
import { clock } from '../../core/clock.js';
import type { HMailItem } from '../../gateway/haraka.js';
import { GatewayMetrics, holdCause } from '../../gateway/metrics.js';
import type { NewDeliveryEvent } from '../../gateway/outbox/outbox.js';
import { MX_FAILURE, PROVIDER } from '../../gateway/outcome.js';
import { TLS_FAILURE, TLS_REQUIRED } from '../../gateway/tls/tls-info.js';
import { expositionProblems, parseExposition } from '../helpers/prometheus.js';

const config = { pacing: { providers: { google: {}, acmemail: {} } } } as never;

const hmail = (provider: string, notes: Record<string, unknown> = {}, uuid = 'u1') =>
  ({ todo: { uuid, notes, rcpt_to: [{ address: 'a@x.test' }] }, notes: { [PROVIDER]: provider } }) as unknown as HMailItem;

const event = (type: NewDeliveryEvent['type'], cause = ''): NewDeliveryEvent => ({
  emailId: 'e',
  type,
  recipient: 'someone@secret-domain.test',
  atMs: 0,
  mx: 'mx.secret-domain.test',
  response: '',
  attempt: 1,
  enhancedCode: '',
  nextAttemptMs: 0,
  cause,
});

afterEach(() => clock.setOffset(0));

describe('GatewayMetrics', () => {
  it('declares every family with every provider at 0, providers from the list, the config and other', async () => {
    const m = new GatewayMetrics(config);
    expect(m.providers).toEqual(expect.arrayContaining(['google', 'microsoft', 'yahoo', 'acmemail', 'other']));
    const parsed = await parseExposition(m.render());
    expect(expositionProblems(parsed)).toEqual([]);
    expect(Object.keys(parsed)).toEqual(
      expect.arrayContaining([
        'postgate_gateway_attempts_total',
        'postgate_gateway_deferrals_total',
        'postgate_gateway_queue_messages',
        'postgate_gateway_queue_deferred_messages',
        'postgate_gateway_connections',
        'postgate_gateway_shaping_actions',
        'postgate_delivery_latency_seconds',
        'postgate_gateway_process_rss_bytes',
      ]),
    );
    expect(m.render()).toContain('postgate_gateway_attempts_total{provider="acmemail",class="bulk",outcome="rejected"} 0\n');
    expect(m.render()).toContain('postgate_gateway_deferrals_total{provider="other",cause="suspended"} 0\n');
  });

  it('counts outcomes per recipient by provider and class, deferrals by cause, latency from accepted_ms to the 2xx', async () => {
    const m = new GatewayMetrics(config);
    const now = clock.now();
    m.outcome(hmail('google', { bulk: true, accepted_ms: now - 3000 }), [event('sent'), event('sent')]);
    m.outcome(hmail('microsoft'), [event('deferred', 'receiver')]);
    m.outcome(hmail('other:secret-domain.test'), [event('deferred', 'network'), event('bounced', 'receiver'), event('rejected', 'receiver')]);
    m.deferral('yahoo', holdCause('pacing', 'warmup'), 3);
    m.deferral('yahoo', holdCause('pacing', 'limit'));
    m.deferral('yahoo', holdCause('shaping', 'shaping'));
    const text = m.render();
    expect(text).toContain('postgate_gateway_attempts_total{provider="google",class="bulk",outcome="delivered"} 2\n');
    expect(text).toContain('postgate_gateway_attempts_total{provider="microsoft",class="transactional",outcome="deferred"} 1\n');
    expect(text).toContain('postgate_gateway_attempts_total{provider="other",class="transactional",outcome="bounced"} 1\n');
    expect(text).toContain('postgate_gateway_attempts_total{provider="other",class="transactional",outcome="rejected"} 1\n');
    expect(text).toContain('postgate_gateway_deferrals_total{provider="microsoft",cause="receiver"} 1\n');
    expect(text).toContain('postgate_gateway_deferrals_total{provider="other",cause="network"} 1\n');
    expect(text).toContain('postgate_gateway_deferrals_total{provider="yahoo",cause="volume"} 3\n');
    expect(text).toContain('postgate_gateway_deferrals_total{provider="yahoo",cause="pacing"} 1\n');
    expect(text).toContain('postgate_gateway_deferrals_total{provider="yahoo",cause="shaping"} 1\n');
    // One observation per delivered copy, about 3 s after its accept.
    expect(text).toContain('postgate_delivery_latency_seconds_bucket{provider="google",le="2.5"} 0\n');
    expect(text).toContain('postgate_delivery_latency_seconds_bucket{provider="google",le="5"} 1\n');
    expect(text).toContain('postgate_delivery_latency_seconds_count{provider="google"} 1\n');
    // A copy accepted before contract 4 (no accepted_ms) has no latency.
    m.outcome(hmail('yahoo'), [event('sent')]);
    expect(m.render()).toContain('postgate_delivery_latency_seconds_count{provider="yahoo"} 0\n');
    // Never a recipient's domain or address.
    expect(m.render()).not.toMatch(/secret-domain|@/);
    expect(expositionProblems(await parseExposition(m.render()))).toEqual([]);
  });

  it('reads connections, shaping actions and queue counts at each scrape', () => {
    const m = new GatewayMetrics(config);
    const rt: { connections?: { idleByGate(): Iterable<[string, number]> }; shaper?: { actions(): Array<{ provider?: string; action?: { kind: string } }> } } =
      {};
    m.readFrom(rt);
    m.attemptStarted(hmail('google', {}, 'a'));
    m.attemptStarted(hmail('google', {}, 'b'));
    m.attemptStarted(hmail('other:secret-domain.test', {}, 'c'));
    let text = m.render();
    expect(text).toContain('postgate_gateway_connections{provider="google",state="busy"} 2\n');
    expect(text).toContain('postgate_gateway_connections{provider="other",state="busy"} 1\n');
    m.attemptEnded(hmail('google', {}, 'a'));
    rt.connections = {
      idleByGate: () => [
        ['google', 1],
        ['other:secret-domain.test', 2],
        ['other:else.test', 1],
      ],
    };
    rt.shaper = {
      actions: () => [
        { provider: 'yahoo', action: { kind: 'suspend' } },
        { provider: 'yahoo', action: { kind: 'suspend' } },
        { provider: 'microsoft', action: { kind: 'rate' } },
        { provider: 'microsoft', action: { kind: 'something new' } },
      ],
    };
    m.queueCounts = () => [
      { provider: 'google', ready: 4, inFlight: 1, deferred: { receiver: 2, pacing: 3 } },
      { provider: 'other', ready: 1, inFlight: 0, deferred: {} },
    ];
    text = m.render();
    expect(text).toContain('postgate_gateway_connections{provider="google",state="busy"} 1\n');
    expect(text).toContain('postgate_gateway_connections{provider="google",state="idle"} 1\n');
    expect(text).toContain('postgate_gateway_connections{provider="other",state="idle"} 3\n');
    expect(text).toContain('postgate_gateway_shaping_actions{provider="yahoo",action="suspend"} 2\n');
    expect(text).toContain('postgate_gateway_shaping_actions{provider="microsoft",action="rate"} 1\n');
    expect(text).toContain('postgate_gateway_queue_messages{provider="google",state="deferred"} 5\n');
    expect(text).toContain('postgate_gateway_queue_messages{provider="google",state="ready"} 4\n');
    expect(text).toContain('postgate_gateway_queue_deferred_messages{provider="google",cause="pacing"} 3\n');
    expect(text).toContain('postgate_gateway_queue_messages{provider="other",state="ready"} 1\n');
    // Gone since the last scrape: back to 0.
    rt.shaper = { actions: () => [] };
    expect(m.render()).toContain('postgate_gateway_shaping_actions{provider="yahoo",action="suspend"} 0\n');
  });
});

describe('TLS of deliveries (gateway/tls)', () => {
  it('counts delivered recipients by TLS, required TLS refused by what required it, and MTA-STS fetches', () => {
    const m = new GatewayMetrics(config);
    const tls = (used: boolean, verified: boolean, policy = '') => JSON.stringify({ used, version: used ? 'TLSv1.3' : '', verified, policy, note: '' });
    m.outcome(hmail('google'), [
      { ...event('sent'), tls: tls(true, true) },
      { ...event('sent'), tls: tls(true, false) },
    ]);
    m.outcome(hmail('google'), [{ ...event('sent'), tls: tls(false, false) }, event('sent')]);
    const refused = hmail('microsoft');
    refused.notes[TLS_REQUIRED] = 'domain';
    refused.notes[TLS_FAILURE] = { reason: 'TLS required (domain): the MX mx.x offers no STARTTLS', enhancedCode: '4.7.10', mx: 'mx.x' };
    m.outcome(refused, [event('deferred', 'receiver')]);
    const sts = hmail('other');
    sts.notes[TLS_REQUIRED] = 'mta-sts';
    sts.notes[MX_FAILURE] = { reason: 'MTA-STS policy of x (enforce) allows none of its MX hosts', enhancedCode: '' };
    m.outcome(sts, [event('deferred', 'network')]);
    // Required but deferred for another reason (the MX answered 451): not a TLS refusal.
    const other = hmail('yahoo');
    other.notes[TLS_REQUIRED] = 'provider';
    m.outcome(other, [event('deferred', 'receiver')]);
    m.stsFetched(true);
    m.stsFetched(false);
    m.stsFetched(false);
    const text = m.render();
    expect(text).toContain('postgate_gateway_delivered_tls_total{provider="google",tls="verified"} 1\n');
    expect(text).toContain('postgate_gateway_delivered_tls_total{provider="google",tls="unverified"} 1\n');
    expect(text).toContain('postgate_gateway_delivered_tls_total{provider="google",tls="none"} 2\n');
    expect(text).toContain('postgate_gateway_tls_refused_total{provider="microsoft",policy="domain"} 1\n');
    expect(text).toContain('postgate_gateway_tls_refused_total{provider="other",policy="mta-sts"} 1\n');
    expect(text).toContain('postgate_gateway_tls_refused_total{provider="yahoo",policy="provider"} 0\n');
    expect(text).toContain('postgate_gateway_mta_sts_fetches_total{result="ok"} 1\n');
    expect(text).toContain('postgate_gateway_mta_sts_fetches_total{result="failed"} 2\n');
  });
});
