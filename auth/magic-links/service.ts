// Magic links: an emailed, single-use sign-in link, valid 10 minutes. Sending follows the email
// codes' rules (auth/codes.ts): the same limiter keys, so codes and links share one budget per
// client IP, per address (hour and day) and per project; a resend cooldown; the address is never
// looked up, so the answer is the same whether or not an account exists or the address is
// suppressed. The token is 32 random bytes, stored as SHA-256 with the checked callback URL and
// the asking browser's challenge. Opening the link (GET) spends nothing: a confirm page POSTs,
// and that POST takes the link atomically and hands the app an svc_code bound to the browser
// that asked (exchange-code checks its verifier).
import { notFound } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import type { Config } from '../../core/config.js';
import type { Logger } from '../../core/log.js';
import { escapeHtml } from '../../core/html.js';
import type { Caller } from '../../control/api-keys/authenticate.js';
import type { MagicLinkRow, MagicLinks, Origin } from '../../control/store/index.js';
import { randomToken, sha256, type AuthCrypto } from '../crypto.js';
import { durations, settings } from '../settings.js';
import { envOf, scopeOf, type Sessions } from '../sessions.js';
import type { Codes } from '../codes.js';
import { maskEmail, type AuthEvents, type EventScope } from '../events.js';
import { withCode } from '../browser-binding.js';

/** A link is valid this long (as an email code). */
export const MAGIC_LINK_TTL_MS = settings.codeTtlMs;
/** The link's path under the base URL; the token is the last segment (a path, so it is not logged as a query). */
export const MAGIC_LINK_PATH = '/api/v1/auth/magic-link';

export interface MagicLinkDeps {
  store: MagicLinks;
  /** The email codes' sending rules and sender: codes and links share one budget (auth/codes.ts). */
  codes: Codes;
  crypto: AuthCrypto;
  sessions: Sessions;
  events: AuthEvents;
  config: Config;
  log: Logger;
}

/** What opening a link found: a usable link, or why not. */
export type Opened = { status: 'ok'; link: MagicLinkRow } | { status: 'used' | 'expired' | 'unknown' | 'malformed' };

/** The token's shape (randomToken of 32 bytes): anything else is unknown without a store lookup. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export class MagicLinkService {
  constructor(private readonly d: MagicLinkDeps) {}

  /** The address a link opens: the token is its last path segment; the recipient's address is never in it. */
  url(token: string): string {
    return `${this.d.config.baseUrl}${MAGIC_LINK_PATH}/${token}`;
  }

  /**
   * Emails a sign-in link to `email` (lower-cased, valid) returning to `callback` (already checked by
   * oauth.checkCallbackUrl) and bound to `clientChallenge` (oauth.checkChallenge). The same outcome for
   * any address: limits first, then the link is stored and mailed (a suppressed address silently not).
   */
  async send(caller: Caller, email: string, callback: URL, clientChallenge: string | null, ip: string, codeFrom: string | null, origin: Origin): Promise<void> {
    const env = envOf(caller);
    const projectId = caller.project.id;
    this.d.codes.countSend(caller, 'email', email, ip, await this.d.store.lastSentAt(projectId, env, email), 'sign-in link');
    const now = clock.now();
    const token = randomToken('', 32);
    const expiresAt = now + MAGIC_LINK_TTL_MS;
    await this.d.store.put({
      tokenHash: sha256(token),
      projectId,
      env,
      email,
      callbackUrl: callback.toString(),
      clientChallenge,
      createdAt: now,
      expiresAt,
      testToken: env === 'test' ? this.d.crypto.encrypt(token) : null,
    });
    // No user id and a masked address: looking the address up would make the event (and the answer's
    // timing) differ for addresses with and without an account. Every accepted send is recorded alike.
    await this.d.events.account(scopeOf(caller), 'magic_link.sent', {
      provider: 'email',
      origin,
      details: { email: maskEmail(email), expires_at: new Date(expiresAt).toISOString() },
    });
    if (env === 'test') return;
    const link = this.url(token);
    const minutes = Math.round(MAGIC_LINK_TTL_MS / durations.MINUTE);
    const name = caller.project.name;
    await this.d.codes.mail(
      caller,
      codeFrom,
      {
        to: email,
        subject: `Sign in to ${name}`,
        text: `Open this link to sign in to ${name}:\n\n${link}\n\nIt works once and expires in ${minutes} minutes, in the browser where you asked for it. If you did not ask for it, ignore this message.`,
        html:
          `<p>Sign in to <b>${escapeHtml(name)}</b>:</p>` +
          `<p><a href="${escapeHtml(link)}" style="display:inline-block;padding:10px 18px;background:#1f6feb;color:#fff;border-radius:8px;text-decoration:none">Sign in</a></p>` +
          `<p>Or copy this address into the browser where you asked for it:<br>${escapeHtml(link)}</p>` +
          `<p>The link works once and expires in ${minutes} minutes. If you did not ask for it, ignore this email.</p>`,
      },
      'sign-in link',
    );
  }

  /** The link of a token without spending it (the confirm page). */
  async peek(token: string): Promise<Opened> {
    if (!TOKEN.test(token)) return { status: 'malformed' };
    const link = await this.d.store.peek(sha256(token));
    if (!link) return { status: 'unknown' };
    if (link.usedAt !== null) return { status: 'used' };
    if (link.expiresAt <= clock.now()) return { status: 'expired' };
    return { status: 'ok', link };
  }

  /** Spends the link (once, on any node). A used or expired link's try is recorded as sign_in.failed (a replayed link shows in the audit log). */
  async take(token: string, origin: Origin): Promise<Opened> {
    if (!TOKEN.test(token)) return { status: 'malformed' };
    const hash = sha256(token);
    const r = await this.d.store.take(hash, clock.now());
    if (r.status === 'used' || r.status === 'expired') {
      const link = await this.d.store.peek(hash);
      if (link) {
        const scope = { projectId: link.projectId, env: link.env };
        await this.d.events.signInFailed(scope, { email: link.email, provider: 'email' }, r.status === 'used' ? 'invalid_code' : 'code_expired', origin);
      }
    }
    return r;
  }

  /** After a successful take: the user is resolved now, and the app's callback gets an svc_code bound to the asking browser. */
  async redirectFor(link: MagicLinkRow, origin: Origin): Promise<string> {
    const scope: EventScope = { projectId: link.projectId, env: link.env };
    const code = await this.d.sessions.openLater(
      scope,
      { provider: 'email', subject: link.email, email: link.email, emailVerified: true, name: null, avatarUrl: null, phone: null, username: null },
      origin,
      link.clientChallenge,
    );
    return withCode(new URL(link.callbackUrl), code);
  }

  /** Test environment only: the current link of an address (test links are never sent). */
  async testLink(caller: Caller, email: string): Promise<{ url: string; expiresAt: number }> {
    const r = await this.d.store.testToken(caller.project.id, email, clock.now());
    if (!r) throw notFound('No active sign-in link for this address');
    return { url: this.url(this.d.crypto.decrypt(r.testToken)), expiresAt: r.expiresAt };
  }

  /** Deletes expired links (their used_at no longer matters: an expired link is refused anyway). */
  async prune(): Promise<void> {
    const n = await this.d.store.prune(clock.now());
    if (n) this.d.log.debug({ deleted: n }, 'expired magic links pruned');
  }
}
