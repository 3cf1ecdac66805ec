// auth/providers/types.ts: what settings a provider reads (so `provider set` can refuse the others)
// and the helpers that turn providers' loose JSON into a profile.
import { describe, expect, it } from 'vitest';
import { providers } from '../../../auth/providers/index.js';
import { joinName, settingsOf, str } from '../../../auth/providers/types.js';

describe('settingsOf', () => {
  it('a provider’s default endpoints, its methods’ required fields and its declared settings', () => {
    expect([...settingsOf(providers.get('google')!)].sort()).toEqual(['authorizationUrl', 'clientId', 'clientSecret', 'issuer', 'jwksUrl', 'tokenUrl']);
    expect([...settingsOf(providers.get('sms')!)].sort()).toEqual(['apiUrl', 'clientSecret']);
    expect([...settingsOf(providers.get('email')!)]).toEqual([]);
    expect([...settingsOf(providers.get('telegram')!)]).toContain('botToken');
    expect([...settingsOf(providers.get('oidc')!)].sort()).toEqual([
      'authorizationUrl',
      'clientId',
      'clientSecret',
      'issuer',
      'jwksUrl',
      'tokenUrl',
      'userinfoUrl',
    ]);
  });

  it('every provider can be configured for each of its methods: what a method needs is a setting it reads', () => {
    for (const def of providers.values()) {
      const accepted = settingsOf(def);
      for (const m of def.methods) for (const f of def.requires[m] ?? []) expect(accepted.has(f), `${def.id}.${m}.${f}`).toBe(true);
      for (const m of Object.keys(def.requires)) expect(def.methods, `${def.id} requires for ${m}`).toContain(m);
    }
  });

  it('every method a provider lists has a way to run: an OAuth adapter, a verifier, or the code channels', () => {
    for (const def of providers.values())
      for (const m of def.methods) {
        const runs =
          m === 'oauth'
            ? !!def.oauth
            : m === 'otp'
              ? ['email', 'sms'].includes(def.id)
              : m === 'magic_link'
                ? def.id === 'email'
                : m === 'webauthn'
                  ? def.id === 'passkey'
                  : !!def.verify?.[m] || (def.id === 'telegram' && m === 'widget');
        expect(runs, `${def.id}.${m}`).toBe(true);
      }
  });
});

describe('profile helpers', () => {
  it('str: a trimmed non-empty string, a number as text, else null', () => {
    expect(str('  Ada ')).toBe('Ada');
    expect(str(42)).toBe('42');
    for (const v of ['', '   ', null, undefined, {}, [], true]) expect(str(v)).toBeNull();
  });

  it('joinName: the parts present, space-separated, or null', () => {
    expect(joinName('Ada', 'Lovelace')).toBe('Ada Lovelace');
    expect(joinName('Ada', undefined, ' ')).toBe('Ada');
    expect(joinName(null, '')).toBeNull();
  });
});
