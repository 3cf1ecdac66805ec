// What the dispatcher asks before handing an email to a gateway: whether its opens and clicks are
// tracked (the sender domain's settings, overridden per email), and its html as it leaves (links
// through the domain's tracking host, the pixel at the end). The stored request keeps the html the
// sender sent; the gateway signs (DKIM) the rewritten one.
import type { DomainSettings } from '../store/index.js';
import type { StoredRequest } from '../mail/vocabulary.js';
import type { TrackingLinks } from './links.js';
import { rewriteHtml } from './rewrite.js';

export interface Tracked {
  open: boolean;
  click: boolean;
  /** `<trackingSubdomain>.<domain>`: the host tracked URLs name. */
  host: string;
}

/**
 * The email's tracking: the domain's, each of open and click overridden by the request when it says; none
 * until the tracking host's CNAME has verified (`ready`): links to a host that does not resolve would be
 * links that do not work.
 */
export function trackingOf(
  domain: string,
  settings: Pick<DomainSettings, 'openTracking' | 'clickTracking' | 'trackingSubdomain'>,
  req: StoredRequest,
  ready: boolean,
): Tracked {
  const host = `${settings.trackingSubdomain}.${domain}`.toLowerCase();
  if (!ready) return { open: false, click: false, host };
  return { open: req.tracking?.open ?? settings.openTracking, click: req.tracking?.click ?? settings.clickTracking, host };
}

/** The domain's tracking CNAME, for its current tracking host, has verified. */
export const trackingReady = (records: ReadonlyArray<{ purpose: string; name: string; status: string }>, host: string): boolean =>
  records.some((r) => r.purpose === 'tracking' && r.status === 'verified' && r.name.toLowerCase() === host.toLowerCase());

/** The html as it leaves (unchanged without html or tracking). `sentAt`: when it leaves, signed into each URL. */
export function trackedHtml(html: string | undefined, t: Tracked, links: TrackingLinks, https: boolean, emailId: string, sentAt: number): string | undefined {
  if (html === undefined || html === '' || (!t.open && !t.click)) return html;
  const base = `${https ? 'https' : 'http'}://${t.host}`;
  return rewriteHtml(html, {
    ...(t.click
      ? {
          click: (url: string) => {
            // A link already through this tracking host stays as it is (a forwarded or re-sent html).
            if (isOnHost(url, t.host)) return undefined;
            return links.clickUrl(base, t.host, emailId, sentAt, url);
          },
        }
      : {}),
    ...(t.open ? { pixel: links.openUrl(base, t.host, emailId, sentAt) } : {}),
  });
}

function isOnHost(url: string, host: string): boolean {
  try {
    return new URL(url).hostname.toLowerCase() === host;
  } catch {
    return false;
  }
}
