// Whether an open or a click looks like a machine rather than a person, judged from the request
// alone (no store read on the request path). The heuristics, documented in the README ("Open and
// click tracking"):
// - a HEAD request: a prefetcher or scanner checking the link; people's browsers GET;
// - a mail provider's image proxy by its user agent: Google (GoogleImageProxy), Yahoo (YahooMailProxy),
//   and Apple Mail Privacy Protection, which fetches every image of a delivered message whether or
//   not anyone reads it (user agent exactly "Mozilla/5.0", or an address in Apple's 17.0.0.0/8);
// - a link scanner by its user agent (security gateways, HTTP libraries, crawlers and previewers);
// - a click within CLICK_SCANNER_MS of the message leaving: a person has not read it yet;
// - the same email's links clicked several at once (BURST_LINKS different links within BURST_MS from
//   one network): a scanner following every link.
// An open through Google's or Yahoo's proxy is usually a person opening the message (the proxy hides
// who): it is flagged `proxy`; Apple's prefetch and the scanners are flagged `scanner`.

export type Agent = 'person' | 'proxy' | 'scanner';

export interface Verdict {
  agent: Agent;
  /** Why it is not a person (absent for a person). */
  reason?: string;
}

export interface Fetch {
  kind: 'open' | 'click';
  method: string;
  userAgent: string;
  /** The client's address as received (whole: judged here, then truncated for storage). */
  ip: string;
  /** When the message left (from the signed link) and now, in ms. */
  sentAt: number;
  at: number;
}

export const CLICK_SCANNER_MS = 10_000;
export const BURST_MS = 5_000;
export const BURST_LINKS = 3;

const PROXIES: Array<[RegExp, string]> = [
  [/GoogleImageProxy/i, 'Google image proxy'],
  [/YahooMailProxy/i, 'Yahoo mail proxy'],
];

const SCANNERS: Array<[RegExp, string]> = [
  [/bot\b|crawler|spider|slurp/i, 'crawler user agent'],
  [
    /Barracuda|Mimecast|Proofpoint|ppops|Forcepoint|Symantec|Sophos|TrendMicro|Cisco|IronPort|FireEye|Cloudmark|SafeLinks|Zscaler/i,
    'security scanner user agent',
  ],
  [/python-requests|python-urllib|aiohttp|Go-http-client|okhttp|Apache-HttpClient|Java\/|libwww-perl|Wget|^curl\//i, 'HTTP library user agent'],
  [/HeadlessChrome|PhantomJS|Prerender|preview|facebookexternalhit|Slackbot|Discordbot|WhatsApp|TelegramBot/i, 'preview or headless browser'],
];

/** An IPv4 address (or IPv4-mapped IPv6) in Apple's 17.0.0.0/8, where Mail Privacy Protection fetches from. */
const isApple = (ip: string): boolean => /^(::ffff:)?17\./i.test(ip);

export function judge(f: Fetch): Verdict {
  if (f.method === 'HEAD') return { agent: 'scanner', reason: 'HEAD request' };
  const ua = f.userAgent.trim();
  if (!ua) return { agent: 'scanner', reason: 'no user agent' };
  for (const [re, reason] of PROXIES) if (re.test(ua)) return { agent: 'proxy', reason };
  if (f.kind === 'open' && (ua === 'Mozilla/5.0' || isApple(f.ip))) return { agent: 'scanner', reason: 'Apple Mail Privacy Protection' };
  for (const [re, reason] of SCANNERS) if (re.test(ua)) return { agent: 'scanner', reason };
  if (f.kind === 'click' && f.at - f.sentAt < CLICK_SCANNER_MS) return { agent: 'scanner', reason: 'clicked within seconds of sending' };
  return { agent: 'person' };
}

/**
 * Remembers recent clicks per email and network (bounded: a few links per key, a fixed number of keys),
 * so a burst of different links clicked together is judged a scanner: the third different link within
 * BURST_MS and every one after. Constant work per click, however many clicks a key gets.
 */
export class BurstWatch {
  private readonly recent = new Map<string, Map<string, number>>();

  constructor(private readonly max = 10_000) {}

  /** True when this click is part of a burst. */
  click(emailId: string, network: string, link: string, at: number): boolean {
    const key = `${emailId}|${network}`;
    const links = this.recent.get(key) ?? new Map<string, number>();
    for (const [l, t] of links) if (at - t >= BURST_MS) links.delete(l);
    links.delete(link);
    links.set(link, at);
    if (links.size > 4 * BURST_LINKS) links.delete(links.keys().next().value!);
    this.recent.delete(key);
    this.recent.set(key, links);
    if (this.recent.size > this.max) this.recent.delete(this.recent.keys().next().value!);
    return links.size >= BURST_LINKS;
  }
}

/** The address as kept: an IPv4 address to its /24, an IPv6 one to its /48 (never whole). */
export function truncateIp(ip: string): string {
  const v4 = /^(?:::ffff:)?(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.\d{1,3}$/i.exec(ip);
  if (v4) return `${v4[1]}.${v4[2]}.${v4[3]}.0/24`;
  if (!ip.includes(':')) return '';
  // Expand :: to get the first three groups.
  const [head = '', tail] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = tail === undefined ? [] : tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t];
  if (groups.length < 3) return '';
  return `${groups
    .slice(0, 3)
    .map((g) => (Number.parseInt(g || '0', 16) || 0).toString(16))
    .join(':')}::/48`;
}
