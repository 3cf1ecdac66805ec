// Download links of received mail (attachments and the raw message): signed and short-lived, as
// Resend's download_url with its expires_at. The link itself is the credential (a browser or a
// plain HTTP client can fetch it without the API key), so it is an HMAC (a key derived from the
// server's secret) over the project, the email, the part and the expiry; a tampered, foreign or
// expired link is a 404, which says nothing about whether the email exists.
import crypto from 'node:crypto';
import { clock } from '../../core/clock.js';
import { deriveKey, safeEqual } from '../../core/crypto.js';

/** As long as Resend's links live. */
export const LINK_TTL_MS = 60 * 60 * 1000;

export interface SignedLink {
  url: string;
  expiresAt: number;
}

export class DownloadLinks {
  private readonly key: Buffer;

  constructor(
    secret: string,
    /** The public base URL (POSTGATE_BASE_URL). */
    private readonly baseUrl: string,
  ) {
    this.key = deriveKey(secret, 'inbound-downloads');
  }

  private mac(projectId: string, emailId: string, part: string, expires: number): string {
    return crypto.createHmac('sha256', this.key).update(`${projectId}\n${emailId}\n${part}\n${expires}`).digest('base64url');
  }

  /** `part`: an attachment id, or 'raw' for the message itself. */
  sign(projectId: string, emailId: string, part: string, now = clock.now()): SignedLink {
    const expires = Math.floor((now + LINK_TTL_MS) / 1000);
    // Outside /v1 (the key's API): the link is the credential.
    const path = part === 'raw' ? `/downloads/received/${emailId}/raw` : `/downloads/received/${emailId}/attachments/${part}`;
    const q = new URLSearchParams({ project: projectId, expires: String(expires), signature: this.mac(projectId, emailId, part, expires) });
    return { url: `${this.baseUrl}${path}?${q}`, expiresAt: expires * 1000 };
  }

  /** True when the link is ours for this email and part, and not expired. */
  check(q: { project?: string; expires?: string; signature?: string }, emailId: string, part: string, now = clock.now()): boolean {
    const expires = Number(q.expires);
    if (!q.project || !q.signature || !Number.isInteger(expires) || expires * 1000 <= now) return false;
    return safeEqual(q.signature, this.mac(q.project, emailId, part, expires));
  }
}
