// The low-level client: one method per call of the auth API (spec: Client
// SDK, low-level client), no React. Works in browsers (with an auth-scope
// key) and in Node 18+ (fetch).
import { PostgateError } from './errors.js';
import { clearVerifier, pendingChallenge, readVerifier } from './binding.js';
import { keepLinkVerifier } from './magic-links.js';
import type { HostedConfig, Method, Provider, Session, SignedIn, TelegramWidgetData, User } from './types.js';

export interface ClientOptions {
  /** The project's API key: in browsers an auth-scope key (browser-safe). */
  apiKey: string;
  /** postgate's base URL, e.g. https://auth.example.com. Default: this page's origin (postgate behind the same host). */
  baseURL?: string;
  /** A fetch of your own (tests, server runtimes). */
  fetch?: typeof fetch;
}

const API = '/api/v1/auth';
const inBrowser = () => typeof window !== 'undefined' && typeof document !== 'undefined';

export class PostgateClient {
  readonly baseURL: string;
  private readonly apiKey: string;
  private readonly fetcher: typeof fetch;

  constructor(opts: ClientOptions) {
    if (!opts.apiKey) throw new PostgateError('INVALID_API_KEY', 'apiKey is required', 0);
    this.apiKey = opts.apiKey;
    this.baseURL = (opts.baseURL ?? '').replace(/\/+$/, '');
    this.fetcher = opts.fetch ?? ((input, init) => fetch(input, init));
  }

  private async request<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, token?: string, keyless = false): Promise<T> {
    const headers: Record<string, string> = {};
    if (!keyless) headers['x-service-key'] = this.apiKey;
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await this.fetcher(`${this.baseURL}${API}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    } catch (err) {
      throw new PostgateError('NETWORK_ERROR', `Could not reach postgate${this.baseURL ? ` at ${this.baseURL}` : ''}: ${(err as Error).message}`, 0);
    }
    const text = await res.text();
    let data: unknown;
    try {
      data = text ? JSON.parse(text) : undefined;
    } catch {
      data = undefined;
    }
    if (!res.ok) {
      const e = (data ?? {}) as { error?: unknown; code?: unknown };
      const retry = Number(res.headers.get('retry-after'));
      throw new PostgateError(
        typeof e.code === 'string' ? e.code : `HTTP_${res.status}`,
        typeof e.error === 'string' ? e.error : `postgate answered ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`,
        res.status,
        Number.isFinite(retry) && retry > 0 ? retry : null,
        e as Record<string, unknown>,
      );
    }
    return data as T;
  }

  /**
   * OAuth: the provider address to send the user to; they come back to `callbackURL` with `svc_code`.
   * In a browser the sign-in is bound to this tab (binding.ts); on a server, pass the challenge of a
   * verifier you keep in the user's session, and that verifier to exchangeCode.
   */
  async signIn(provider: string, opts: { callbackURL: string; method?: 'oauth'; codeChallenge?: string }): Promise<{ url: string }> {
    const codeChallenge = opts.codeChallenge ?? (inBrowser() ? await pendingChallenge() : undefined);
    return this.request('POST', '/sign-in/social', {
      provider,
      method: opts.method ?? 'oauth',
      callbackURL: opts.callbackURL,
      ...(codeChallenge ? { codeChallenge } : {}),
    });
  }

  /** The one-time `svc_code` from the callback address → a session token (once). In a browser, this tab's verifier goes with it. */
  async exchangeCode(code: string, opts: { codeVerifier?: string } = {}): Promise<SignedIn> {
    const stored = opts.codeVerifier === undefined && inBrowser() ? readVerifier() : null;
    const codeVerifier = opts.codeVerifier ?? stored ?? undefined;
    const signed = await this.request<SignedIn>('POST', '/exchange-code', { code, ...(codeVerifier ? { codeVerifier } : {}) });
    if (stored) clearVerifier();
    return signed;
  }

  /** A credential from a provider's own SDK (id_token, silent token, instant token, OpenID id_token, Mini App initData). */
  verifyToken(provider: string, method: Exclude<Method, 'oauth' | 'widget' | 'otp'>, opts: { credential: string; nonce?: string }): Promise<SignedIn> {
    return this.request('POST', '/verify-token', { provider, method, credential: opts.credential, ...(opts.nonce !== undefined ? { nonce: opts.nonce } : {}) });
  }

  /** Telegram Login Widget data, as the widget handed it to the page. */
  signInTelegramWidget(data: TelegramWidgetData): Promise<SignedIn> {
    return this.request('POST', '/sign-in/telegram/widget', data);
  }

  sendEmailOTP(email: string): Promise<{ success: boolean; message: string }> {
    return this.request('POST', '/sign-in/email-otp/send', { email });
  }

  verifyEmailOTP(email: string, code: string): Promise<SignedIn> {
    return this.request('POST', '/sign-in/email-otp/verify', { email, code });
  }

  /** `phone` in E.164, e.g. +79991234567. */
  sendSmsOTP(phone: string): Promise<{ success: boolean; message: string }> {
    return this.request('POST', '/sign-in/sms-otp/send', { phone });
  }

  verifySmsOTP(phone: string, code: string): Promise<SignedIn> {
    return this.request('POST', '/sign-in/sms-otp/verify', { phone, code });
  }

  getSession(token: string): Promise<{ user: User; session: Session }> {
    return this.request('GET', '/session', undefined, token);
  }

  signOut(token: string): Promise<{ success: boolean }> {
    return this.request('POST', '/sign-out', {}, token);
  }

  getProviders(): Promise<{ providers: Provider[] }> {
    return this.request('GET', '/providers');
  }

  /** The hosted widget's view of a project (public: no key is sent). */
  getHostedConfig(slug: string): Promise<HostedConfig> {
    return this.request('GET', `/hosted-config/${encodeURIComponent(slug)}`, undefined, undefined, true);
  }

  /** Starts an OAuth sign-in the way the hosted widget does (public: no key is sent); bound to this tab in a browser. */
  async hostedStart(opts: { slug: string; provider: string; redirectUri: string; codeChallenge?: string }): Promise<{ url: string }> {
    const codeChallenge = opts.codeChallenge ?? (inBrowser() ? await pendingChallenge() : undefined);
    return this.request('POST', '/hosted-start', { ...opts, method: 'oauth', ...(codeChallenge ? { codeChallenge } : {}) }, undefined, true);
  }

  /** Options to register a passkey for the session `token`'s user (navigator.credentials.create). */
  passkeyRegisterOptions(token: string, opts: { rpId?: string; origin?: string } = {}): Promise<import('./types.js').PasskeyCreationOptions> {
    return this.request('POST', '/passkey/register/options', opts, token);
  }

  /** Keeps the browser's new passkey for the user; `name` labels it ("MacBook"). */
  passkeyRegisterVerify(token: string, response: import('./types.js').PasskeyRegistration, name?: string): Promise<import('./types.js').Passkey> {
    return this.request('POST', '/passkey/register/verify', { response, ...(name !== undefined ? { name } : {}) }, token);
  }

  /** The user's passkeys. */
  async listPasskeys(token: string): Promise<import('./types.js').Passkey[]> {
    return (await this.request<{ passkeys: import('./types.js').Passkey[] }>('GET', '/passkeys', undefined, token)).passkeys;
  }

  /** Removes one of the user's passkeys (NOT_FOUND for anyone else's). */
  removePasskey(token: string, id: string): Promise<{ success: boolean }> {
    return this.request('DELETE', `/passkeys/${encodeURIComponent(id)}`, undefined, token);
  }

  /** Options to sign in with a discoverable passkey (navigator.credentials.get). */
  passkeySignInOptions(opts: { rpId?: string; origin?: string } = {}): Promise<import('./types.js').PasskeyRequestOptions> {
    return this.request('POST', '/sign-in/passkey/options', opts);
  }

  /** Signs in with the browser's assertion. */
  passkeySignInVerify(response: import('./types.js').PasskeyAssertion): Promise<SignedIn> {
    return this.request('POST', '/sign-in/passkey/verify', { response });
  }

  /** Browser: creates a passkey and registers it for the session `token`'s user. */
  async registerPasskey(token: string, name?: string, opts: { rpId?: string } = {}): Promise<import('./types.js').Passkey> {
    return (await import('./passkeys.js')).registerPasskey(this, token, { ...(name !== undefined ? { name } : {}), ...opts });
  }

  /** Browser: signs in with a passkey the person picks (or, `autofill`, picks from an input's autofill). */
  async signInWithPasskey(opts: { autofill?: boolean; rpId?: string } = {}): Promise<SignedIn> {
    return (await import('./passkeys.js')).signInWithPasskey(this, opts);
  }
  /** Finishes a sign-in held for its second factor (PostgateError TWO_FACTOR_REQUIRED: `pendingOf(err).pendingToken`). */
  verifyTwoFactor(pendingToken: string, code: string, method?: import('./types.js').TwoFactorMethod): Promise<SignedIn> {
    return this.request('POST', '/two-factor/verify', { pendingToken, code, ...(method ? { method } : {}) });
  }

  /** A held sign-in that must enrol first (`enrol: true`, the project requires a factor): a new authenticator-app secret. */
  enrolTwoFactor(pendingToken: string): Promise<import('./types.js').TotpSetup> {
    return this.request('POST', '/two-factor/enrol', { pendingToken });
  }

  /** The enrolled app's first code under the held sign-in: the session, and the backup codes (shown once). */
  confirmTwoFactorEnrolment(pendingToken: string, code: string): Promise<SignedIn & { backupCodes: string[] }> {
    return this.request('POST', '/two-factor/enrol/confirm', { pendingToken, code });
  }

  /** The signed-in user's second factors. */
  getTwoFactor(token: string): Promise<import('./types.js').TwoFactorStatus> {
    return this.request('GET', '/two-factor', undefined, token);
  }

  /** Starts enrolling an authenticator app for the signed-in user (off until confirmTotp). */
  setupTotp(token: string): Promise<import('./types.js').TotpSetup> {
    return this.request('POST', '/two-factor/totp/setup', {}, token);
  }

  /** The new app's first code: two-factor is on; the backup codes (shown once). */
  confirmTotp(token: string, code: string): Promise<{ backupCodes: string[] }> {
    return this.request('POST', '/two-factor/totp/confirm', { code }, token);
  }

  /** New backup codes against a current code (the old ones stop working). */
  regenerateBackupCodes(token: string, code: string): Promise<{ backupCodes: string[] }> {
    return this.request('POST', '/two-factor/backup-codes', { code }, token);
  }

  /** Turns two-factor off against a current code (refused when the project requires it). */
  disableTwoFactor(token: string, code: string): Promise<{ success: boolean }> {
    return this.request('POST', '/two-factor/disable', { code }, token);
  }
  /**
   * Emails a single-use sign-in link (valid 10 minutes) that returns to `callbackURL` with svc_code. In a
   * browser it is bound to this browser (the email opens a new tab: the verifier is kept for it); on a
   * server, pass the challenge of a verifier you keep, and that verifier to exchangeCode.
   */
  async sendMagicLink(email: string, opts: { callbackURL: string; codeChallenge?: string }): Promise<{ success: boolean; message: string }> {
    const own = opts.codeChallenge === undefined && inBrowser();
    const codeChallenge = opts.codeChallenge ?? (own ? await pendingChallenge() : undefined);
    if (own) keepLinkVerifier(readVerifier());
    return this.request('POST', '/sign-in/magic-link/send', { email, callbackURL: opts.callbackURL, ...(codeChallenge ? { codeChallenge } : {}) });
  }
  /** A short-lived JWT of the session for your backend (verify it with the JWKS at /.well-known/jwks.json). */
  getToken(sessionToken: string): Promise<import('./types.js').SessionJwt> {
    return this.request('POST', '/token', {}, sessionToken);
  }
}

export function createClient(opts: ClientOptions): PostgateClient {
  return new PostgateClient(opts);
}

export { PostgateError } from './errors.js';
export { createCodeVerifier, codeChallengeOf } from './binding.js';
export type * from './types.js';
