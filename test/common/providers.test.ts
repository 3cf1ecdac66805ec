// common/providers.ts: which receiving provider a recipient domain belongs to, by its name or by
// every one of its MX hosts.
import { describe, expect, it } from 'vitest';
import { classify, providerOfDomain, providerOfMx } from '../../common/providers.js';

describe('receiving providers', () => {
  it('groups by mailbox domain and by MX host suffix; every MX must agree', () => {
    expect(providerOfDomain('gmail.com')).toBe('google');
    expect(providerOfDomain('Mail.RU')).toBe('mailru');
    expect(providerOfDomain('sub.yandex.ru')).toBe('yandex');
    expect(providerOfDomain('example.com')).toBeUndefined();
    expect(classify('company.test', ['aspmx.l.google.com', 'alt1.aspmx.l.google.com'])).toBe('google');
    expect(classify('corp.test', ['corp-test.mail.protection.outlook.com'])).toBe('microsoft');
    expect(classify('shop.test', ['mx.yandex.net'])).toBe('yandex');
    expect(classify('shop.test', ['mxs.mail.ru'])).toBe('mailru');
    expect(classify('me.test', ['mx01.mail.icloud.com.'])).toBe('apple');
    expect(classify('y.test', ['mta5.am0.yahoodns.net'])).toBe('yahoo');
    // Mixed providers, or a look-alike name, are not attributed.
    expect(providerOfMx(['aspmx.l.google.com', 'mx.self-hosted.test'])).toBeUndefined();
    expect(classify('evil.test', ['google.com.evil.test'])).toBe('other');
    expect(classify('plain.test', [])).toBe('other');
  });
});
