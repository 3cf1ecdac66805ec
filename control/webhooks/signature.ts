// Standard Webhooks signing (https://www.standardwebhooks.com): the secret is
// `whsec_` + base64 bytes; the signature is HMAC-SHA256 over `id.timestamp.body`.
import crypto from 'node:crypto';

export function newWebhookSecret(): string {
  return `whsec_${crypto.randomBytes(32).toString('base64')}`;
}

export function sign(secret: string, id: string, timestampSec: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${crypto.createHmac('sha256', key).update(`${id}.${timestampSec}.${body}`).digest('base64')}`;
}

/** Verifies the headers of a received webhook (what a receiver does; used by tests and documented for users). */
export function verify(secret: string, headers: Record<string, string | undefined>, body: string, toleranceSec = 300, nowSec = Date.now() / 1000): boolean {
  const id = headers['webhook-id'];
  const ts = Number(headers['webhook-timestamp']);
  const sigs = (headers['webhook-signature'] ?? '').split(' ');
  if (!id || !Number.isFinite(ts) || Math.abs(nowSec - ts) > toleranceSec) return false;
  const want = Buffer.from(sign(secret, id, ts, body));
  return sigs.some((s) => {
    const got = Buffer.from(s);
    return got.length === want.length && crypto.timingSafeEqual(got, want);
  });
}
