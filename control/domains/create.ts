// Adding a sender domain: one DKIM key per domain, sealed at rest.
import crypto from 'node:crypto';
import { ApiError } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import type { Sealer } from '../../core/crypto.js';
import type { Config } from '../../core/config.js';
import type { DomainRow, Store } from '../store/index.js';
import { newDkimKey, newSelector, recordsFor } from './records.js';

const DOMAIN = /^(?=.{4,253}$)((?!-)[a-z0-9-]{1,63}(?<!-)\.)+[a-z]{2,63}$/;

export function normalizeDomain(input: string, opts: { allowLocal?: boolean } = {}): string {
  const name = input.trim().toLowerCase().replace(/\.$/, '');
  if (!(opts.allowLocal && name === 'localhost') && !DOMAIN.test(name)) throw new ApiError('INVALID_REQUEST', 'name must be a domain name such as example.com');
  return name;
}

export async function createDomain(
  store: Store,
  config: Config,
  dkimSealer: Sealer,
  projectId: string,
  input: string,
  opts: { allowLocal?: boolean } = {},
): Promise<DomainRow> {
  const name = normalizeDomain(input, opts);
  if (await store.domains.byName(projectId, name)) throw new ApiError('CONFLICT', `Domain ${name} is already added`);
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
    records: recordsFor(name, selector, key.publicB64, config) as unknown as DomainRow['records'],
    createdAt: now,
    verifiedAt: null,
    checkedAt: null,
  };
  await store.domains.create(row);
  return row;
}
