// Adding a sender domain: one DKIM key per domain, sealed at rest.
import crypto from 'node:crypto';
import { ApiError } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import type { Sealer } from '../../core/crypto.js';
import type { Config } from '../../core/config.js';
import { DEFAULT_DOMAIN_SETTINGS, type DomainRow, type DomainSettings, type Store } from '../store/index.js';
import { newDkimKey, newSelector, recordsFor } from './records.js';
import { RETURN_PATH_LABEL_SHAPE } from '../../common/return-path.js';

const DOMAIN = /^(?=.{4,253}$)((?!-)[a-z0-9-]{1,63}(?<!-)\.)+[a-z]{2,63}$/;

export function normalizeDomain(input: string, opts: { allowLocal?: boolean } = {}): string {
  const name = input.trim().toLowerCase().replace(/\.$/, '');
  if (!(opts.allowLocal && name === 'localhost') && !DOMAIN.test(name)) throw new ApiError('INVALID_REQUEST', 'name must be a domain name such as example.com');
  return name;
}

/** Resend's custom_return_path (the subdomain label bounces and reports come back to), or another one-label field. */
export function returnPathLabelOf(input: string, field = 'custom_return_path'): string {
  const label = input.trim().toLowerCase();
  if (!RETURN_PATH_LABEL_SHAPE.test(label)) throw new ApiError('INVALID_REQUEST', `${field} must be one DNS label, such as bounces`);
  return label;
}

export async function createDomain(
  store: Store,
  config: Config,
  dkimSealer: Sealer,
  projectId: string,
  input: string,
  opts: { allowLocal?: boolean; returnPath?: string; region?: string; settings?: DomainSettings } = {},
): Promise<DomainRow> {
  const name = normalizeDomain(input, opts);
  const label = opts.returnPath === undefined ? undefined : returnPathLabelOf(opts.returnPath);
  if (await store.domains.byName(projectId, name)) throw new ApiError('CONFLICT', `Domain ${name} is already added`);
  const settings = opts.settings ?? { ...DEFAULT_DOMAIN_SETTINGS };
  const now = clock.now();
  const key = newDkimKey();
  const selector = newSelector(new Date(now));
  const row: DomainRow = {
    id: crypto.randomUUID(),
    projectId,
    name,
    status: 'pending',
    selector,
    dkimPrivate: dkimSealer.seal(key.privatePem),
    dkimPublic: key.publicB64,
    records: recordsFor(name, selector, key.publicB64, config, label, settings) as unknown as DomainRow['records'],
    createdAt: now,
    verifiedAt: null,
    checkedAt: null,
    region: opts.region ?? null,
    settings,
  };
  await store.domains.create(row);
  return row;
}
