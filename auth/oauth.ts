// OAuth redirect sign-in: the start (callback address checked against the
// project's allowed origins, exact origin match, and its exact callback URLs
// when it registered any; the browser's codeChallenge (auth/browser-binding.ts); state, PKCE S256 and nonce
// kept server side, the state usable once) and the callback (code exchange and
// profile through oauth4webapi and the provider's adapter), which hands the
// app a one-time `svc_code` or `?error=`.
import * as oauth from 'oauth4webapi';
import { ApiError, invalid } from '../core/errors.js';
import { clock } from '../core/clock.js';
import type { Config } from '../core/config.js';
import type { Logger } from '../core/log.js';
import type { Caller } from '../control/api-keys/authenticate.js';
import type { SignInStore, Origin } from '../control/store/index.js';
import { randomToken, sha256, type AuthCrypto } from './crypto.js';
import { settings } from './settings.js';
import { envOf, type Sessions } from './sessions.js';
import type { ProjectAuthConfig } from './project-config.js';
import { effectiveEndpoints } from './providers/oidc.js';
import { CredentialError, type OAuthAdapter, type OAuthTokens, type ProviderConfig, type ProviderDef } from './providers/types.js';
import { providers } from './providers/index.js';
import type { AuthEvents } from './events.js';
import { returnWith } from './browser-binding.js';

export interface OAuthDeps {
  config: Config;
  log: Logger;
  store: SignInStore;
  crypto: AuthCrypto;
  sessions: Sessions;
  projects: ProjectAuthConfig;
  events: AuthEvents;
}

interface Server {
  as: oauth.AuthorizationServer;
  client: oauth.Client;
  auth: oauth.ClientAuth;
  insecure: boolean;
  userinfo?: string;
}

/** Values of `?error=` the app may see: the provider's own OAuth error codes pass through, nothing else. */
const safeError = (e: string | null | undefined) => (e && /^[a-z_]{1,64}$/.test(e) ? e : 'server_error');

export class OAuthFlows {
  constructor(private readonly d: OAuthDeps) {}

  redirectUri(provider: string): string {
    return `${this.d.config.baseUrl}/callback/${provider}`;
  }

  /** Throws REDIRECT_NOT_ALLOWED unless the address's origin is exactly one the project allows. */
  async checkCallbackUrl(projectId: string, callbackURL: string): Promise<URL> {
    let u: URL;
    try {
      u = new URL(callbackURL);
    } catch {
      throw new ApiError('REDIRECT_NOT_ALLOWED', 'callbackURL is not an absolute URL');
    }
    if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.username || u.password || !(await this.d.store.hasOrigin(projectId, u.origin))) {
      throw new ApiError('REDIRECT_NOT_ALLOWED', `The origin of callbackURL is not allowed for this project (allow it with: postgate origin allow <origin>)`);
    }
    // Registered exact URLs narrow the origin rule: no other path or query on the origin (an open redirect there) is reachable.
    const exact = await this.d.store.callbackUrls(projectId);
    if (exact.length && (callbackURL.includes('#') || !exact.includes(u.toString()))) {
      throw new ApiError('REDIRECT_NOT_ALLOWED', 'callbackURL is not one of the callback URLs registered for this project (postgate callback list)');
    }
    return u;
  }

  /** The browser binding of a start: required unless the project turned it off (auth set --require-code-verifier off). */
  async checkChallenge(projectId: string, clientChallenge: string | undefined): Promise<string | null> {
    if (clientChallenge !== undefined) return clientChallenge;
    if ((await this.d.projects.settings(projectId)).requireCodeVerifier) {
      throw invalid('This project requires codeChallenge: the S256 hash of a verifier the browser keeps and sends to exchange-code as codeVerifier');
    }
    return null;
  }

  private async server(def: ProviderDef, cfg: ProviderConfig): Promise<Server> {
    const e = await effectiveEndpoints(cfg);
    const a = def.oauth!;
    const base = e.issuerMetadata ?? {};
    const as: oauth.AuthorizationServer = {
      ...base,
      // Plain OAuth providers have no issuer; their own origin stands in (never compared: `iss` is stripped for them).
      issuer: e.issuer ?? new URL(e.authorizationUrl!).origin,
      authorization_endpoint: e.authorizationUrl,
      token_endpoint: e.tokenUrl,
      ...(e.jwksUrl ? { jwks_uri: e.jwksUrl } : {}),
    };
    const client: oauth.Client = { client_id: cfg.clientId!, [oauth.clockSkew]: clock.offset() / 1000 };
    const auth =
      a.clientAuth === 'none'
        ? oauth.None()
        : a.clientAuth === 'basic'
          ? oauth.ClientSecretBasic(cfg.clientSecret!)
          : oauth.ClientSecretPost(cfg.clientSecret!);
    const insecure = [e.authorizationUrl, e.tokenUrl, e.userinfoUrl].some((u) => u?.startsWith('http:'));
    return { as, client, auth, insecure, ...(a.oidc && e.userinfoUrl ? { userinfo: e.userinfoUrl } : {}) };
  }

  async start(caller: Caller, def: ProviderDef, cfg: ProviderConfig, callbackURL: string, codeChallenge: string | undefined): Promise<string> {
    const callback = await this.checkCallbackUrl(caller.project.id, callbackURL);
    const clientChallenge = await this.checkChallenge(caller.project.id, codeChallenge);
    const a = def.oauth!;
    const { as } = await this.server(def, cfg);
    const state = randomToken('', 32);
    const verifier = oauth.generateRandomCodeVerifier();
    const nonce = a.oidc ? oauth.generateRandomNonce() : null;
    const now = clock.now();
    const cap = this.d.config.auth.pendingSignInsPerProject;
    const stored = await this.d.store.insertState(
      {
        stateHash: sha256(state),
        projectId: caller.project.id,
        env: envOf(caller),
        provider: def.id,
        callbackUrl: callback.toString(),
        codeVerifier: this.d.crypto.encrypt(verifier),
        nonce,
        clientChallenge,
        createdAt: now,
        expiresAt: now + settings.oauthStateTtlMs,
      },
      cap,
    );
    // Each start keeps a state until its callback or for oauthStateTtlMs: a script starting sign-ins must not fill the store.
    if (!stored) {
      this.d.log.warn({ project: caller.project.slug, cap }, 'oauth sign-ins waiting for their callback reached the project cap');
      throw new ApiError(
        'TOO_MANY_PENDING_SIGN_INS',
        `This project has ${cap} sign-ins waiting for their provider; try again in a minute`,
        {},
        { 'Retry-After': '60' },
      );
    }
    const url = new URL(as.authorization_endpoint!);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', cfg.clientId!);
    url.searchParams.set('redirect_uri', this.redirectUri(def.id));
    if (a.scope) url.searchParams.set('scope', a.scope);
    url.searchParams.set('state', state);
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
    url.searchParams.set('code_challenge_method', 'S256');
    if (nonce) url.searchParams.set('nonce', nonce);
    return url.toString();
  }

  /**
   * The provider's redirect back. Answers the address to send the browser to:
   * the app's callback with `svc_code` or `error`. Throws (a JSON error, no
   * redirect) only when the state is unknown, used or expired, since then
   * there is no trusted address to go back to.
   */
  async callback(providerId: string, query: URLSearchParams, origin: Origin): Promise<string> {
    const state = query.get('state');
    const st = state ? await this.d.store.takeState(sha256(state)) : undefined;
    if (!state || !st || st.expiresAt <= clock.now() || st.provider !== providerId) {
      throw invalid('Unknown, expired or already used OAuth state; start the sign-in again');
    }
    const back = (param: 'svc_code' | 'error', value: string) => returnWith(st.callbackUrl, param, value);
    const scope = { projectId: st.projectId, env: st.env };
    const failed = async (reason: string, error: string) => {
      await this.d.events.signInFailed(scope, { provider: providerId }, reason, origin);
      return back('error', error);
    };
    const def = providers.get(providerId);
    const cfg = await this.d.projects.provider(st.projectId, providerId);
    if (!def?.oauth || !cfg?.methods.includes('oauth')) return failed('provider_not_enabled', 'provider_not_enabled');
    try {
      const profile = await this.complete(def, def.oauth, cfg, query, state, st.nonce, this.d.crypto.decrypt(st.codeVerifier));
      const code = await this.d.sessions.openLater(scope, { provider: def.id, ...profile }, origin, st.clientChallenge);
      return back('svc_code', code);
    } catch (err) {
      // The provider said no (the user denied access, …): its own error code goes back to the app.
      if (err instanceof oauth.AuthorizationResponseError) return failed('provider_refused', safeError(err.error));
      this.d.log.warn({ provider: providerId, err: (err as Error).message }, 'oauth callback failed');
      if (err instanceof CredentialError || err instanceof oauth.ResponseBodyError || err instanceof oauth.OperationProcessingError)
        return failed('invalid_credential', 'invalid_grant');
      return failed('provider_error', 'server_error');
    }
  }

  private async complete(
    def: ProviderDef,
    a: OAuthAdapter,
    cfg: ProviderConfig,
    query: URLSearchParams,
    state: string,
    nonce: string | null,
    verifier: string,
  ) {
    const { as, client, auth, insecure, userinfo } = await this.server(def, cfg);
    const params = new URLSearchParams(query);
    // Mix-up defence for plain OAuth providers is the per-provider redirect_uri bound to the state; `iss` is an OpenID matter.
    if (!a.oidc) params.delete('iss');
    const validated = oauth.validateAuthResponse(as, client, params, state);
    const extra: Record<string, string> = {};
    for (const name of a.forwardCallbackParams ?? []) {
      const v = query.get(name);
      if (v) extra[name] = v;
    }
    const opts = { additionalParameters: extra, [oauth.allowInsecureRequests]: insecure, signal: AbortSignal.timeout(settings.providerTimeoutMs) };
    const res = await oauth.authorizationCodeGrantRequest(as, client, auth, validated, this.redirectUri(def.id), verifier, opts);
    let tokens: OAuthTokens;
    if (a.readToken) {
      tokens = await a.readToken(res, state);
    } else {
      const r = await oauth.processAuthorizationCodeResponse(as, client, res, { expectedNonce: nonce ?? oauth.expectNoNonce, requireIdToken: a.oidc });
      const claims = oauth.getValidatedIdTokenClaims(r) as Record<string, unknown> | undefined;
      tokens = { accessToken: r.access_token, ...(claims ? { claims } : {}) };
      if (userinfo && claims) {
        const ui = await oauth.userInfoRequest({ ...as, userinfo_endpoint: userinfo }, client, r.access_token, {
          [oauth.allowInsecureRequests]: insecure,
          signal: AbortSignal.timeout(settings.providerTimeoutMs),
        });
        const info = await oauth.processUserInfoResponse({ ...as, userinfo_endpoint: userinfo }, client, String(claims.sub), ui);
        tokens.claims = { ...info, ...claims };
      }
    }
    return a.profile(cfg, tokens);
  }
}
