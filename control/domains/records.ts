// What a sender domain needs in DNS: a DKIM key at a selector, SPF and DMARC
// for the domain, and a return-path subdomain (MX to our inbound host, SPF)
// that carries the VERP envelope sender, so SPF aligns and bounces come back.
import crypto from 'node:crypto';
import net from 'node:net';
import type { Config } from '../../core/config.js';
import { RETURN_PATH_LABEL, returnPathDomain } from '../../common/return-path.js';
import { DEFAULT_DOMAIN_SETTINGS, type DomainSettings } from '../store/index.js';

export interface DnsRecord {
  /**
   * What the record is for: dkim, spf, dmarc, return_path_mx, return_path_spf (sending: the domain's status
   * follows these), and the records a setting adds: tracking (CNAME of the tracking host), inbound_mx.
   */
  purpose: string;
  type: 'TXT' | 'MX' | 'CNAME';
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

/** The records that decide whether a domain may send (its `status`); the others belong to a setting. */
export const SENDING_PURPOSES: ReadonlySet<string> = new Set(['dkim', 'spf', 'dmarc', 'return_path_mx', 'return_path_spf']);

/**
 * A domain's records after its settings changed: the new set, each record that was there before keeping
 * its status and problem (the same purpose, name and value), the new ones pending.
 */
export function mergeRecords(before: DnsRecord[], after: DnsRecord[]): DnsRecord[] {
  const key = (r: DnsRecord) => `${r.purpose}\n${r.name}\n${r.value}`;
  const old = new Map(before.map((r) => [key(r), r]));
  return after.map((r) => old.get(key(r)) ?? r);
}

export function recordsFor(
  domain: string,
  selector: string,
  dkimPublic: string,
  config: Config,
  label: string = RETURN_PATH_LABEL,
  settings: DomainSettings = DEFAULT_DOMAIN_SETTINGS,
): DnsRecord[] {
  return [...sendingRecords(domain, selector, dkimPublic, config, label), ...settingRecords(domain, config, settings)];
}

/** The records a setting adds: the tracking host's CNAME, the inbound MX. */
function settingRecords(domain: string, config: Config, settings: DomainSettings): DnsRecord[] {
  const records: DnsRecord[] = [];
  // Open or click tracking: the tracking host, a CNAME to the operator's (control serves it by Host).
  if (settings.openTracking || settings.clickTracking)
    records.push({ purpose: 'tracking', type: 'CNAME', name: `${settings.trackingSubdomain}.${domain}`, value: config.tracking.host, status: 'pending' });
  // Receiving mail (capabilities.receiving): the domain's own MX, to the host its return-path MX names.
  if (settings.receiving) records.push({ purpose: 'inbound_mx', type: 'MX', name: domain, value: config.mxHost, priority: 10, status: 'pending' });
  return records;
}

function sendingRecords(domain: string, selector: string, dkimPublic: string, config: Config, label: string): DnsRecord[] {
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
