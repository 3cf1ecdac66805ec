// Receiving providers, recognised the way KumoMTA's provider blocks do it: by the
// recipient domain (DomainSuffix) or, for a domain hosted elsewhere, by its MX hosts
// (MXSuffix): a company domain whose MX is aspmx.l.google.com is Google, and shares
// gmail.com's warm-up budget, rate and connections. Every MX host must match the same
// provider, so a domain that mixes providers is not attributed to either.

export interface ProviderRule {
  name: string;
  /** Mailbox domains of the provider itself; a subdomain matches too. */
  domains: string[];
  /** Suffixes of the provider's MX hosts (a leading dot: any host under it). */
  mx: string[];
}

export const OTHER = 'other';

export const PROVIDERS: ProviderRule[] = [
  {
    name: 'google',
    domains: ['gmail.com', 'googlemail.com', 'google.com'],
    mx: ['.google.com', '.googlemail.com', '.smtp.goog'],
  },
  {
    name: 'microsoft',
    domains: [
      'outlook.com',
      'hotmail.com',
      'live.com',
      'msn.com',
      'passport.com',
      'windowslive.com',
      'hotmail.co.uk',
      'hotmail.fr',
      'hotmail.de',
      'hotmail.it',
      'hotmail.es',
      'live.co.uk',
      'live.fr',
      'live.de',
      'live.ru',
      'outlook.fr',
      'outlook.de',
    ],
    mx: ['.olc.protection.outlook.com', '.mail.protection.outlook.com', '.protection.outlook.com', '.mx.microsoft', '.hotmail.com'],
  },
  {
    name: 'yahoo',
    domains: [
      'yahoo.com',
      'ymail.com',
      'rocketmail.com',
      'aol.com',
      'aim.com',
      'verizon.net',
      'yahoo.co.uk',
      'yahoo.fr',
      'yahoo.de',
      'yahoo.co.jp',
      'yahoo.com.br',
    ],
    mx: ['.yahoodns.net', '.yahoo.com', '.aol.com'],
  },
  {
    name: 'mailru',
    domains: ['mail.ru', 'inbox.ru', 'list.ru', 'bk.ru', 'internet.ru', 'my.com', 'vk.com'],
    mx: ['.mail.ru'],
  },
  {
    name: 'yandex',
    domains: ['yandex.ru', 'yandex.com', 'ya.ru', 'yandex.by', 'yandex.kz', 'yandex.ua', 'yandex.com.tr', 'narod.ru'],
    mx: ['.yandex.ru', '.yandex.net'],
  },
  {
    name: 'apple',
    domains: ['icloud.com', 'me.com', 'mac.com'],
    mx: ['.mail.icloud.com', '.icloud.com'],
  },
  {
    name: 'gmx',
    domains: ['gmx.de', 'gmx.net', 'gmx.com', 'gmx.at', 'gmx.ch', 'web.de', 'mail.com', '1und1.de'],
    mx: ['.gmx.net', '.gmx.com', '.web.de', '.mail.com', '.kundenserver.de'],
  },
  {
    name: 'proton',
    domains: ['proton.me', 'protonmail.com', 'protonmail.ch', 'pm.me'],
    mx: ['.protonmail.ch', '.proton.me'],
  },
  {
    name: 'zoho',
    domains: ['zoho.com', 'zohomail.com', 'zoho.eu'],
    mx: ['.zoho.com', '.zoho.eu', '.zohomail.com'],
  },
  {
    name: 'comcast',
    domains: ['comcast.net', 'xfinity.com'],
    mx: ['.comcast.net'],
  },
];

const norm = (name: string) => name.toLowerCase().replace(/\.$/, '');

const suffixMatch = (host: string, suffix: string): boolean =>
  suffix.startsWith('.') ? host.endsWith(suffix) || host === suffix.slice(1) : host === suffix || host.endsWith(`.${suffix}`);

/** The provider whose own mailbox domains include this domain, if any. */
export function providerOfDomain(domain: string, rules: readonly ProviderRule[] = PROVIDERS): string | undefined {
  const d = norm(domain);
  return rules.find((r) => r.domains.some((x) => d === x || d.endsWith(`.${x}`)))?.name;
}

/** The provider every one of these MX hosts belongs to, if they agree. */
export function providerOfMx(hosts: readonly string[], rules: readonly ProviderRule[] = PROVIDERS): string | undefined {
  if (!hosts.length) return undefined;
  let found: string | undefined;
  for (const h of hosts.map(norm)) {
    const rule = rules.find((r) => r.mx.some((s) => suffixMatch(h, s)));
    if (!rule) return undefined;
    if (found && found !== rule.name) return undefined;
    found = rule.name;
  }
  return found;
}

export function classify(domain: string, mxHosts: readonly string[], rules: readonly ProviderRule[] = PROVIDERS): string {
  return providerOfDomain(domain, rules) ?? providerOfMx(mxHosts, rules) ?? OTHER;
}
