// What a sender domain needs in DNS: a DKIM key at a selector, SPF and DMARC
// for the domain, and a return-path subdomain (MX to our inbound host, SPF)
// that carries the VERP envelope sender, so SPF aligns and bounces come back.
import crypto from 'node:crypto';
import net from 'node:net';
import type { Config } from '../../core/config.js';
import { RETURN_PATH_LABEL, returnPathDomain } from '../../common/return-path.js';

export interface DnsRecord {
  /** What the record is for: dkim, spf, dmarc, return_path_mx, return_path_spf. */
  purpose: string;
  type: 'TXT' | 'MX';
  name: string;
  value: string;
  priority?: number;
  status: 'pending' | 'verified' | 'failed';
  /** Why the last check failed. */
  problem?: string;
}

export function newDkimKey(): { privatePem: string; publicB64: string } {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicB64: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
  };
}

export function newSelector(now: Date): string {
  return `pg${now.toISOString().slice(0, 7).replace('-', '')}`;
}

/** The SPF mechanisms that authorise our sending addresses (or the MX host when none are configured). */
export function spfMechanisms(config: Config): string[] {
  if (!config.sendingIps.length) return [`a:${config.mxHost}`];
  return config.sendingIps.map((ip) => (net.isIPv6(ip) ? `ip6:${ip}` : `ip4:${ip}`));
}

/** The return-path label the domain's records name (its custom_return_path), read from its return-path MX record. */
export function returnPathLabel(records: DnsRecord[], domain: string): string {
  const mx = records.find((r) => r.purpose === 'return_path_mx');
  return mx?.name.endsWith(`.${domain}`) ? mx.name.slice(0, -domain.length - 1) : RETURN_PATH_LABEL;
}

export function recordsFor(domain: string, selector: string, dkimPublic: string, config: Config, label: string = RETURN_PATH_LABEL): DnsRecord[] {
  const spf = `v=spf1 ${spfMechanisms(config).join(' ')} ~all`;
  return [
    { purpose: 'dkim', type: 'TXT', name: `${selector}._domainkey.${domain}`, value: `v=DKIM1; k=rsa; p=${dkimPublic}`, status: 'pending' },
    { purpose: 'spf', type: 'TXT', name: domain, value: spf, status: 'pending' },
    { purpose: 'dmarc', type: 'TXT', name: `_dmarc.${domain}`, value: 'v=DMARC1; p=none; adkim=r; aspf=r', status: 'pending' },
    { purpose: 'return_path_mx', type: 'MX', name: returnPathDomain(domain, label), value: config.mxHost, priority: 10, status: 'pending' },
    {
      purpose: 'return_path_spf',
      type: 'TXT',
      name: returnPathDomain(domain, label),
      value: `v=spf1 ${spfMechanisms(config).join(' ')} -all`,
      status: 'pending',
    },
  ];
}
