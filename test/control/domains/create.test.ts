// control/domains/create.ts on a real store: a sender domain's name in one form, a DKIM key of its
// own sealed at rest, its DNS records, a custom return path label, and no domain added twice.
import crypto from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDomain, normalizeDomain, returnPathLabelOf } from '../../../control/domains/create.js';
import { loadConfig } from '../../../core/config.js';
import { sealer } from '../../../core/crypto.js';
import type { ApiError } from '../../../core/errors.js';
import { unitStore, type UnitStore } from '../../helpers/unit-store.js';

const config = loadConfig({ POSTGATE_MX_HOST: 'mx.postgate.test', POSTGATE_SYSTEM_FROM: 'n@postgate.test' });
const dkim = sealer('domain secret', 'dkim');
const code = (f: () => unknown) => {
  try {
    f();
    return 'ok';
  } catch (e) {
    return (e as ApiError).code;
  }
};

describe('normalizeDomain', () => {
  it('lower case, without a trailing dot or spaces', () => {
    expect(normalizeDomain(' Mail.Acme.TEST. ')).toBe('mail.acme.test');
  });

  it('refuses what is not a domain name; localhost only where allowed', () => {
    for (const bad of [
      'acme',
      '-acme.test',
      'acme-.test',
      'ac_me.test',
      'a..test',
      'acme.t',
      'user@acme.test',
      'http://acme.test',
      `${'a'.repeat(64)}.test`,
      'acme.test/x',
      '1.2.3.4',
    ])
      expect(
        code(() => normalizeDomain(bad)),
        bad,
      ).toBe('INVALID_REQUEST');
    expect(code(() => normalizeDomain('localhost'))).toBe('INVALID_REQUEST');
    expect(normalizeDomain('localhost', { allowLocal: true })).toBe('localhost');
  });
});

it('returnPathLabelOf: one DNS label, lower case', () => {
  expect(returnPathLabelOf(' Bounces ')).toBe('bounces');
  for (const bad of ['a.b', '-x', 'x-', '', 'x y'])
    expect(
      code(() => returnPathLabelOf(bad)),
      bad,
    ).toBe('INVALID_REQUEST');
});

describe('createDomain', () => {
  let u: UnitStore;
  beforeEach(async () => {
    u = await unitStore();
  });
  afterEach(() => u.close());

  it('a pending domain with its own DKIM key, sealed at rest, and the records to publish', async () => {
    const d = await createDomain(u.store, config, dkim, u.project.id, 'Acme.test', { returnPath: 'bounce', region: 'eu-west-1' });
    expect(d).toMatchObject({ name: 'acme.test', status: 'pending', region: 'eu-west-1', verifiedAt: null });
    expect(d.dkimPrivate).toMatch(/^v1\./);
    expect(d.dkimPrivate).not.toContain('PRIVATE KEY');
    const pem = dkim.open(d.dkimPrivate);
    // The sealed private key and the published public key are a pair.
    const sig = crypto.sign('sha256', Buffer.from('x'), pem);
    expect(
      crypto.verify('sha256', Buffer.from('x'), crypto.createPublicKey({ key: Buffer.from(d.dkimPublic, 'base64'), format: 'der', type: 'spki' }), sig),
    ).toBe(true);
    expect(d.records.map((r) => `${r.purpose} ${r.name}`)).toEqual([
      `dkim ${d.selector}._domainkey.acme.test`,
      'spf acme.test',
      'dmarc _dmarc.acme.test',
      'return_path_mx bounce.acme.test',
      'return_path_spf bounce.acme.test',
    ]);
    expect((await u.store.domains.byName(u.project.id, 'acme.test'))?.id).toBe(d.id);
  });

  it('each domain gets a key of its own; the same name twice in a project is a conflict, in another project not', async () => {
    const a = await createDomain(u.store, config, dkim, u.project.id, 'a.test');
    const b = await createDomain(u.store, config, dkim, u.project.id, 'b.test');
    expect(a.dkimPublic).not.toBe(b.dkimPublic);
    await expect(createDomain(u.store, config, dkim, u.project.id, 'A.test.')).rejects.toMatchObject({ code: 'CONFLICT' });
    const other = await u.another('other');
    await expect(createDomain(u.store, config, dkim, other.id, 'a.test')).resolves.toMatchObject({ name: 'a.test' });
  });
});
