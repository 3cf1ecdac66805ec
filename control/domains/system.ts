// The platform's own sender (POSTGATE_SYSTEM_FROM): sign-in codes go out from it
// when a project has no verified domain of its own. Its domain belongs to a
// system project, is created at the first start with a DKIM key, and is verified
// by the operator's configuration (they own the platform's DNS).
import { clock } from '../../core/clock.js';
import type { Sealer } from '../../core/crypto.js';
import type { Config } from '../../core/config.js';
import type { Logger } from '../../core/log.js';
import type { Store } from '../store/index.js';
import { domainOf, parseMailbox } from '../../common/address.js';
import { createDomain } from './create.js';

export const SYSTEM_PROJECT_SLUG = 'postgate-system';

export async function ensureSystemSender(
  store: Store,
  config: Config,
  dkimSealer: Sealer,
  log: Logger,
): Promise<{ projectId: string; domain: string } | undefined> {
  const from = parseMailbox(config.systemFrom);
  if (!from) {
    log.error({ systemFrom: config.systemFrom }, 'POSTGATE_SYSTEM_FROM is not an address; sign-in codes cannot be sent');
    return undefined;
  }
  const domain = domainOf(from.address);
  // Several controls may start at once on one database: whoever loses the race to create the
  // project or the domain reads back what the winner wrote.
  const project = await createOrRead(
    () => store.projects.bySlug(SYSTEM_PROJECT_SLUG),
    () => store.projects.create({ id: 'system', slug: SYSTEM_PROJECT_SLUG, name: 'postgate system sender', plan: 'scale', createdAt: clock.now() }, []),
  );
  const existing = await store.domains.byName(project.id, domain);
  const d = await createOrRead(
    () => store.domains.byName(project.id, domain),
    () => createDomain(store, config, dkimSealer, project.id, domain, { allowLocal: true }),
  );
  if (!existing) log.info({ domain, records: d.records }, 'system sender domain created; publish these DNS records for it');
  if (d.status !== 'verified') await store.domains.update(d.id, 'verified', d.records, clock.now(), clock.now());
  return { projectId: project.id, domain };
}

async function createOrRead<T>(read: () => Promise<T | undefined>, create: () => Promise<T>): Promise<T> {
  const found = await read();
  if (found) return found;
  try {
    return await create();
  } catch (err) {
    const raced = await read();
    if (raced) return raced;
    throw err;
  }
}
