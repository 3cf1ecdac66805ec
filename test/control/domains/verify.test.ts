// control/domains/verify.ts: each record of a domain checked over DNS (answered here from a table),
// and why one does not pass.
import { describe, expect, it } from 'vitest';
import { recordsFor } from '../../../control/domains/records.js';
import { verifyRecords } from '../../../control/domains/verify.js';
import { loadConfig } from '../../../core/config.js';
import type { Resolver } from '../../../core/dns.js';

const config = loadConfig({ POSTGATE_MX_HOST: 'mx.postgate.test', POSTGATE_SENDING_IPS: '203.0.113.5', POSTGATE_SYSTEM_FROM: 'n@postgate.test' });
const records = recordsFor('acme.test', 'pg1', 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA', config);

const err = (code: string) => Object.assign(new Error(code), { code });
function resolver(txt: Record<string, string[][]>, mx: Record<string, string[]> = {}, broken = false): Resolver {
  return {
    resolveTxt: async (name: string) => {
      if (broken) throw err('ETIMEOUT');
      if (!txt[name]) throw err('ENOTFOUND');
      return txt[name];
    },
    resolveMx: async (name: string) => {
      if (!mx[name]) throw err('ENODATA');
      return mx[name].map((exchange, i) => ({ exchange, priority: 10 + i }));
    },
  } as unknown as Resolver;
}

const published: Record<string, string[][]> = {
  // A long key arrives as several strings; spacing and case in the tags vary.
  'pg1._domainkey.acme.test': [['v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0', 'BAQEFAAOCAQ8AMIIBCgKCAQEA']],
  'acme.test': [['google-site-verification=abc'], ['v=spf1 include:_spf.google.com ip4:203.0.113.5 ~all']],
  '_dmarc.acme.test': [['v=DMARC1; p=quarantine']],
  'pg-bounces.acme.test': [['V=SPF1  ip4:203.0.113.5 -all']],
};
const mxs = { 'pg-bounces.acme.test': ['MX.postgate.test.'] };
const byPurpose = (r: Awaited<ReturnType<typeof verifyRecords>>) =>
  Object.fromEntries(r.map((x) => [x.purpose, x.status === 'verified' ? 'verified' : x.problem]));

it('every record as published passes (split TXT strings, other TXT records, case, spacing and a trailing dot)', async () => {
  const checked = await verifyRecords(resolver(published, mxs), records);
  expect(byPurpose(checked)).toEqual({ dkim: 'verified', spf: 'verified', dmarc: 'verified', return_path_mx: 'verified', return_path_spf: 'verified' });
  expect(checked.every((r) => !('problem' in r))).toBe(true);
});

describe('what does not pass, and why', () => {
  it('another key, SPF without our address or twice, no DMARC, an MX elsewhere', async () => {
    const wrong = {
      ...published,
      'pg1._domainkey.acme.test': [['v=DKIM1; k=rsa; p=OTHERKEY']],
      'acme.test': [['v=spf1 include:_spf.google.com ~all']],
      '_dmarc.acme.test': [['not dmarc']],
      'pg-bounces.acme.test': [['v=spf1 ip4:203.0.113.5 -all'], ['v=spf1 -all']],
    };
    expect(byPurpose(await verifyRecords(resolver(wrong, { 'pg-bounces.acme.test': ['mx.elsewhere.test'] }), records))).toEqual({
      dkim: 'DKIM key not found at the selector',
      spf: 'SPF does not authorise ip4:203.0.113.5',
      dmarc: 'no DMARC record',
      return_path_mx: 'MX of pg-bounces.acme.test does not point at mx.postgate.test',
      return_path_spf: 'more than one SPF record',
    });
  });

  it('records that are not there, and DNS that does not answer', async () => {
    expect(byPurpose(await verifyRecords(resolver({}), records))).toEqual({
      dkim: 'no TXT record at pg1._domainkey.acme.test',
      spf: 'no TXT record at acme.test',
      dmarc: 'no TXT record at _dmarc.acme.test',
      return_path_mx: 'no MX record at pg-bounces.acme.test',
      return_path_spf: 'no TXT record at pg-bounces.acme.test',
    });
    expect((await verifyRecords(resolver({}, {}, true), records)).find((r) => r.purpose === 'spf')!.problem).toBe('DNS lookup failed (ETIMEOUT)');
  });

  it('a record that passes again loses its old problem', async () => {
    const failed = await verifyRecords(resolver({}), records);
    const again = await verifyRecords(resolver(published, mxs), failed);
    expect(again.every((r) => r.status === 'verified' && r.problem === undefined)).toBe(true);
  });
});

describe('the tracking CNAME (open or click tracking on)', () => {
  const tracked = loadConfig({ POSTGATE_MX_HOST: 'mx.postgate.test', POSTGATE_TRACKING_HOST: 'track.postgate.test', POSTGATE_SYSTEM_FROM: 'n@postgate.test' });
  const settings = { openTracking: false, clickTracking: true, tls: 'opportunistic' as const, trackingSubdomain: 'links', receiving: false };
  const withCname = (cname: Record<string, string[]>): Resolver =>
    ({
      resolveCname: async (name: string) => {
        if (!cname[name]) throw err('ENODATA');
        return cname[name];
      },
    }) as unknown as Resolver;

  it('is in the records only when open or click tracking is on, named by the tracking subdomain', () => {
    expect(recordsFor('acme.test', 'pg1', 'K', tracked).some((r) => r.purpose === 'tracking')).toBe(false);
    const r = recordsFor('acme.test', 'pg1', 'K', tracked, undefined, { ...settings, trackingSubdomain: 't' }).filter((x) => x.purpose === 'tracking');
    expect(r).toEqual([{ purpose: 'tracking', type: 'CNAME', name: 't.acme.test', value: 'track.postgate.test', status: 'pending' }]);
  });

  it('passes when the name is an alias of the tracking host (case and trailing dot aside), fails otherwise', async () => {
    const r = recordsFor('acme.test', 'pg1', 'K', tracked, undefined, settings).filter((x) => x.purpose === 'tracking');
    expect((await verifyRecords(withCname({ 'links.acme.test': ['Track.Postgate.Test.'] }), r))[0]).toMatchObject({ status: 'verified' });
    expect((await verifyRecords(withCname({ 'links.acme.test': ['elsewhere.example'] }), r))[0]).toMatchObject({
      status: 'failed',
      problem: 'CNAME of links.acme.test does not point at track.postgate.test',
    });
    expect((await verifyRecords(withCname({}), r))[0]).toMatchObject({ status: 'failed', problem: 'no CNAME record at links.acme.test' });
  });
});
