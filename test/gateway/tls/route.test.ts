import { describe, expect, it } from 'vitest';
import { applyTlsRoute, decideTlsRoute } from '../../../gateway/tls/route.js';
import { STS_TESTING, TLS_REQUIRED, TLS_STATE, tlsInfoOf } from '../../../gateway/tls/tls-info.js';
import type { HMailItem } from '../../../gateway/haraka.js';

const routes = [
  { ip: '10.0.0.1', host: 'mx1.example.net', priority: 10 },
  { ip: '10.0.0.2', host: 'backup.other.test', priority: 20 },
];
const none = new Set<string>();
const input = { domain: 'example.net', requireTls: false, routes };

describe('what requires TLS and which MX hosts remain', () => {
  it('nothing: opportunistic, every MX', () => {
    expect(decideTlsRoute(input, none, undefined)).toEqual({ kind: 'routes', routes, required: '' });
  });
  it('the sender domain (tls: enforced) first', () => {
    expect(decideTlsRoute({ ...input, requireTls: true }, new Set(['google']), { mode: 'enforce', mx: ['*.example.net'], maxAge: 60 })).toMatchObject({
      required: 'domain',
      routes: [routes[0]],
    });
  });
  it('a provider the operator named, found by the recipient domain or its MX hosts', () => {
    expect(decideTlsRoute({ ...input, domain: 'gmail.com' }, new Set(['google']), undefined)).toMatchObject({ required: 'provider' });
    const google = [{ ip: '10.0.0.3', host: 'aspmx.l.google.com', priority: 1 }];
    expect(decideTlsRoute({ domain: 'company.test', requireTls: false, routes: google }, new Set(['google']), undefined)).toMatchObject({
      required: 'provider',
    });
    expect(decideTlsRoute(input, new Set(['google']), undefined)).toMatchObject({ required: '' });
  });
  it('an MTA-STS policy in enforce mode keeps only the MX hosts it names', () => {
    expect(decideTlsRoute(input, none, { mode: 'enforce', mx: ['*.example.net'], maxAge: 60 })).toEqual({
      kind: 'routes',
      routes: [routes[0]],
      required: 'mta-sts',
    });
  });
  it('... and defers, saying why, when it names none of them', () => {
    const r = decideTlsRoute(input, none, { mode: 'enforce', mx: ['mail.example.org'], maxAge: 60 });
    expect(r).toEqual({
      kind: 'temporary',
      required: 'mta-sts',
      reason: 'MTA-STS policy of example.net (enforce) allows none of its MX hosts: mx1.example.net, backup.other.test (the policy names mail.example.org)',
    });
  });
  it('testing mode keeps every MX and notes the ones enforce would refuse; none changes nothing', () => {
    expect(decideTlsRoute(input, none, { mode: 'testing', mx: ['*.example.net'], maxAge: 60 })).toEqual({
      kind: 'routes',
      routes,
      required: '',
      testing: 'MTA-STS policy of example.net in testing mode: enforce would have refused MX backup.other.test (not in its mx list)',
    });
    expect(decideTlsRoute(input, none, { mode: 'none', mx: [], maxAge: 60 })).toEqual({ kind: 'routes', routes, required: '' });
  });
});

describe('the notes an attempt carries to its events', () => {
  const item = () => ({ notes: {} as Record<string, unknown>, todo: { notes: {} } }) as unknown as HMailItem;
  it('a required attempt names its policy even before it connects, and clears what an earlier attempt left', () => {
    const h = item();
    h.notes[TLS_STATE] = { used: true, version: 'TLSv1.2', verified: false };
    const out = applyTlsRoute(h, { kind: 'routes', routes }, { kind: 'routes', routes: [routes[0]!], required: 'domain' });
    expect(out).toEqual({ kind: 'routes', routes: [routes[0]] });
    expect(h.notes[TLS_REQUIRED]).toBe('domain');
    expect(tlsInfoOf(h)).toEqual({ used: false, version: '', verified: false, policy: 'domain', note: '' });
  });
  it('opportunistic: nothing until a connection says how it went', () => {
    const h = item();
    applyTlsRoute(h, { kind: 'routes', routes }, { kind: 'routes', routes, required: '' });
    expect(tlsInfoOf(h)).toBeUndefined();
    h.notes[TLS_STATE] = { used: true, version: 'TLSv1.3', verified: false };
    expect(tlsInfoOf(h)).toEqual({ used: true, version: 'TLSv1.3', verified: false, policy: '', note: '' });
  });
  it('testing mode notes what enforce would have refused: an MX not listed, or an unverified connection', () => {
    const h = item();
    applyTlsRoute(h, { kind: 'routes', routes }, { kind: 'routes', routes, required: '', testing: '' });
    expect(h.notes[STS_TESTING]).toBe('');
    h.notes[TLS_STATE] = { used: true, version: 'TLSv1.3', verified: true };
    expect(tlsInfoOf(h)?.note).toBe('');
    h.notes[TLS_STATE] = { used: false, version: '', verified: false };
    expect(tlsInfoOf(h)?.note).toBe('MTA-STS policy in testing mode: enforce would have refused delivery without TLS');
  });
  it('a deferral by MTA-STS becomes a temporary lookup failure', () => {
    const h = item();
    expect(applyTlsRoute(h, { kind: 'routes', routes }, { kind: 'temporary', required: 'mta-sts', reason: 'why' })).toEqual({
      kind: 'temporary',
      reason: 'why',
    });
    expect(h.notes[TLS_REQUIRED]).toBe('mta-sts');
  });
});

describe('a policy with many mx patterns', () => {
  it('is listed in a few names, not thousands', () => {
    const mx = Array.from({ length: 3000 }, (_, i) => `mx${i}.example.org`);
    const r = decideTlsRoute(input, none, { mode: 'enforce', mx, maxAge: 60 });
    expect(r.kind === 'temporary' && r.reason).toBe(
      'MTA-STS policy of example.net (enforce) allows none of its MX hosts: mx1.example.net, backup.other.test (the policy names mx0.example.org, mx1.example.org, mx2.example.org, mx3.example.org, mx4.example.org and 2995 more)',
    );
  });
});
