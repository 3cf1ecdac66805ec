// control/domains/records.ts: what a sender domain publishes: its DKIM key at a selector, SPF and
// DMARC, and a return-path subdomain (MX to our inbound host, SPF) carrying the VERP sender.
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newDkimKey, newSelector, recordsFor, returnPathLabel, spfMechanisms } from '../../../control/domains/records.js';
import { loadConfig } from '../../../core/config.js';

const config = loadConfig({ POSTGATE_BASE_URL: 'https://mail.postgate.test', POSTGATE_MX_HOST: 'mx.postgate.test' });
const withIps = loadConfig({ POSTGATE_MX_HOST: 'mx.postgate.test', POSTGATE_SENDING_IPS: '203.0.113.5,2001:db8::5', POSTGATE_SYSTEM_FROM: 'n@postgate.test' });

it('a DKIM key is RSA-2048: the private key signs, the published public key verifies', () => {
  const { privatePem, publicB64 } = newDkimKey();
  const pub = crypto.createPublicKey({ key: Buffer.from(publicB64, 'base64'), format: 'der', type: 'spki' });
  expect(pub.asymmetricKeyDetails?.modulusLength).toBe(2048);
  const sig = crypto.sign('sha256', Buffer.from('x'), privatePem);
  expect(crypto.verify('sha256', Buffer.from('x'), pub, sig)).toBe(true);
});

it('a selector names the year and month', () => {
  expect(newSelector(new Date('2026-03-15T10:00:00Z'))).toBe('pg202603');
});

describe('SPF', () => {
  it('the MX host when no sending addresses are configured, else each address', () => {
    expect(spfMechanisms(config)).toEqual(['a:mx.postgate.test']);
    expect(spfMechanisms(withIps)).toEqual(['ip4:203.0.113.5', 'ip6:2001:db8::5']);
  });
});

describe('recordsFor', () => {
  it('five records, each pending', () => {
    const r = recordsFor('acme.test', 'pg202603', 'PUBKEY', config);
    expect(r).toEqual([
      { purpose: 'dkim', type: 'TXT', name: 'pg202603._domainkey.acme.test', value: 'v=DKIM1; k=rsa; p=PUBKEY', status: 'pending' },
      { purpose: 'spf', type: 'TXT', name: 'acme.test', value: 'v=spf1 a:mx.postgate.test ~all', status: 'pending' },
      { purpose: 'dmarc', type: 'TXT', name: '_dmarc.acme.test', value: 'v=DMARC1; p=none; adkim=r; aspf=r', status: 'pending' },
      { purpose: 'return_path_mx', type: 'MX', name: 'pg-bounces.acme.test', value: 'mx.postgate.test', priority: 10, status: 'pending' },
      { purpose: 'return_path_spf', type: 'TXT', name: 'pg-bounces.acme.test', value: 'v=spf1 a:mx.postgate.test -all', status: 'pending' },
    ]);
  });

  it('a custom return path label names the subdomain, and is read back from the records', () => {
    const r = recordsFor('acme.test', 's', 'K', withIps, 'bounce');
    expect(r.filter((x) => x.purpose.startsWith('return_path')).map((x) => x.name)).toEqual(['bounce.acme.test', 'bounce.acme.test']);
    expect(r.find((x) => x.purpose === 'return_path_spf')!.value).toBe('v=spf1 ip4:203.0.113.5 ip6:2001:db8::5 -all');
    expect(returnPathLabel(r, 'acme.test')).toBe('bounce');
    expect(returnPathLabel(recordsFor('acme.test', 's', 'K', config), 'acme.test')).toBe('pg-bounces');
    // Records that name no return-path MX under the domain: the default.
    expect(returnPathLabel([], 'acme.test')).toBe('pg-bounces');
    expect(returnPathLabel([{ purpose: 'return_path_mx', type: 'MX', name: 'x.other.test', value: 'm', status: 'pending' }], 'acme.test')).toBe('pg-bounces');
  });
});
