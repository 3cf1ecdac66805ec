// The React side: <PostgateProvider config> holds the signed-in state, finishes
// an OAuth return (svc_code in the address: exchanged once, removed from the
// address bar, onSignIn called) and restores a kept session; usePostgate()
// gives user, loading, signIn, signOut and error.
import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { PostgateClient } from './client.js';
import { PostgateError, toPostgateError } from './errors.js';
import { readVerifier } from './binding.js';
import { useSendMagicLink } from './magic-links-react.js';
import type { MagicLinkResult } from './magic-links.js';
import { tokenStore, type StorageKind } from './storage.js';
import { usePasskeys } from './passkeys-react.js';
import { useTwoFactor } from './two-factor.js';
import { useSessionJwt } from './token.js';
import type { Session, SignedIn, TelegramWidgetData, User } from './types.js';

export interface PostgateConfig {
  /** The project's auth-scope API key (browser-safe). */
  apiKey: string;
  /** postgate's base URL. Default: this page's origin. */
  baseURL?: string;
  /** Where OAuth returns (its origin must be allowed for the project). Default: the current page. */
  callbackURL?: string;
  onSignIn?(user: User): void;
  onSignOut?(): void;
  /** Where the session token is kept. Default: local (localStorage). */
  storage?: StorageKind;
}

export type SignInOptions =
  | { method?: 'oauth'; callbackURL?: string }
  /** provider 'email': without `code` the code is sent; with it, checked. */
  | { method: 'otp'; email: string; code?: string }
  /** provider 'sms': the same with an E.164 phone number. */
  | { method: 'otp'; phone: string; code?: string }
  | { method: 'id_token' | 'silent_token' | 'instant_token' | 'oidc' | 'miniapp'; credential: string; nonce?: string }
  | { method: 'widget'; data: TelegramWidgetData };

export type SignInResult =
  | { status: 'redirecting' }
  | { status: 'code_sent' }
  | { status: 'signed_in'; user: User }
  | { status: 'error'; error: PostgateError };

export interface PostgateState {
  user: User | null;
  session: Session | null;
  loading: boolean;
  /** The last failure's message (an API error's own text), or null. */
  error: string | null;
  /** Its code (INVALID_CODE, CODE_EXPIRED, …), or null. */
  errorCode: string | null;
}

export interface PostgateContextValue extends PostgateState {
  signIn(provider: string, options?: SignInOptions): Promise<SignInResult>;
  signOut(): Promise<void>;
  clearError(): void;
  /** The session token, for your own calls to your backend. */
  token: string | null;
  client: PostgateClient;
  /** Registers a passkey for the signed-in user (the browser asks to create one). */
  registerPasskey: import('./passkeys-react.js').PasskeysValue['registerPasskey'];
  /** Signs in with a passkey and keeps the session as the other sign-ins do; `autofill` waits on an input's passkey autofill. */
  signInWithPasskey: import('./passkeys-react.js').PasskeysValue['signInWithPasskey'];
  /**
   * A sign-in (or the OAuth return's exchange) held for its second factor: show a code prompt (or, with
   * `enrol`, enrolment first); null otherwise. The held signIn() answered `status: 'error'` with code
   * TWO_FACTOR_REQUIRED.
   */
  twoFactor: import('./types.js').TwoFactorPrompt | null;
  /** Finishes the held sign-in with a code of the authenticator app or a backup code; signs in like the other sign-ins. */
  verifyTwoFactor(code: string, method?: import('./types.js').TwoFactorMethod): Promise<SignInResult>;
  /**
   * A new authenticator-app secret (its otpauth URI and QR code): under the held sign-in when it must enrol
   * (`twoFactor.enrol`), else for the signed-in user. Off until confirmTwoFactor.
   */
  enrolTwoFactor(): Promise<import('./types.js').TotpSetup>;
  /** The app's first code: two-factor is on (and a held sign-in is signed in); the backup codes, shown once. */
  confirmTwoFactor(code: string): Promise<{ backupCodes: string[] }>;
  /** Emails a single-use sign-in link back to `callbackURL` (default: config.callbackURL or this page); the return signs in like OAuth's. */
  sendMagicLink(email: string, options?: { callbackURL?: string }): Promise<MagicLinkResult>;
  /** A JWT of the session for your backend: kept, renewed shortly before it expires, null when signed out. */
  getToken(): Promise<string | null>;
}

const Ctx = createContext<PostgateContextValue | null>(null);

/** One exchange per code, even when React runs an effect twice (StrictMode): a second use would revoke the session. */
const exchanges = new Map<string, Promise<SignedIn>>();
function exchangeOnce(client: PostgateClient, code: string): Promise<SignedIn> {
  let p = exchanges.get(code);
  if (!p) {
    p = client.exchangeCode(code);
    exchanges.set(code, p);
  }
  return p;
}

/** Takes `svc_code` (and an OAuth `error`) out of the address bar; answers what was there. */
function takeReturnParams(): { code: string | null; error: string | null } {
  if (typeof window === 'undefined') return { code: null, error: null };
  const url = new URL(window.location.href);
  const code = url.searchParams.get('svc_code');
  const error = code ? null : url.searchParams.get('error');
  if (code !== null || error !== null) {
    url.searchParams.delete('svc_code');
    url.searchParams.delete('error');
    window.history.replaceState(window.history.state, '', url.toString());
  }
  return { code, error };
}

const here = () => {
  const u = new URL(window.location.href);
  u.searchParams.delete('svc_code');
  u.searchParams.delete('error');
  return u.toString();
};

export function PostgateProvider({ config, children }: { config: PostgateConfig; children?: ReactNode }) {
  const { apiKey, baseURL } = config;
  const client = useMemo(() => new PostgateClient({ apiKey, ...(baseURL !== undefined ? { baseURL } : {}) }), [apiKey, baseURL]);
  const store = useMemo(
    () => tokenStore(config.storage ?? 'local', `postgate.session:${baseURL ?? ''}:${apiKey.slice(-8)}`),
    [config.storage, baseURL, apiKey],
  );
  // Callbacks are read when they fire, so an inline config object does not restart anything.
  const latest = useRef(config);
  latest.current = config;

  const [state, setState] = useState<PostgateState>({ user: null, session: null, loading: true, error: null, errorCode: null });
  const [token, setToken] = useState<string | null>(null);

  const fail = useCallback((err: unknown): PostgateError => {
    const e = toPostgateError(err);
    setState((s) => ({ ...s, loading: false, error: e.message, errorCode: e.code }));
    return e;
  }, []);

  /** A new session: kept, completed from GET /session (the sign-in answers carry only some user fields), announced. */
  const adopt = useCallback(
    async (signed: SignedIn): Promise<User> => {
      store.set(signed.token);
      setToken(signed.token);
      let user: User = signed.user;
      let session: Session | null = null;
      try {
        const s = await client.getSession(signed.token);
        user = { ...signed.user, ...s.user };
        session = s.session;
      } catch {
        /* the sign-in answer's fields will do */
      }
      setState({ user, session, loading: false, error: null, errorCode: null });
      latest.current.onSignIn?.(user);
      return user;
    },
    [client, store],
  );

  const { hold: holdTwoFactor, value: twoFactorValue } = useTwoFactor({ client, token, adopt, fail, setState }); // two-factor

  const started = useRef<PostgateClient | null>(null);
  useEffect(() => {
    if (started.current === client) return;
    started.current = client;
    void (async () => {
      const back = takeReturnParams();
      try {
        if (back.code) {
          // A code this tab did not ask for is someone else's sign-in (login CSRF): never exchanged.
          if (!readVerifier() && !exchanges.has(back.code)) {
            fail(new PostgateError('SIGN_IN_NOT_STARTED', 'This sign-in was not started in this browser. Sign in again.', 0));
            return;
          }
          await adopt(await exchangeOnce(client, back.code));
          return;
        }
        if (back.error) fail(new PostgateError('OAUTH_ERROR', `Sign-in did not complete: ${back.error}`, 0));
        const kept = store.get();
        if (!kept) {
          setState((s) => ({ ...s, loading: false }));
          return;
        }
        const s = await client.getSession(kept);
        setToken(kept);
        setState((st) => ({ ...st, user: s.user, session: s.session, loading: false }));
      } catch (err) {
        // A kept session that ended is the normal signed-out state, not an error to show.
        if (err instanceof PostgateError && err.code === 'SESSION_INVALID' && !back.code) {
          store.clear();
          setState((s) => ({ ...s, loading: false }));
        } else if (!holdTwoFactor(err)) {
          fail(err);
        }
      }
    })();
  }, [client, store, adopt, fail, holdTwoFactor]);

  const signIn = useCallback(
    async (provider: string, options: SignInOptions = {}): Promise<SignInResult> => {
      setState((s) => ({ ...s, loading: true, error: null, errorCode: null }));
      try {
        if (options.method === undefined || options.method === 'oauth') {
          const callbackURL = ('callbackURL' in options && options.callbackURL) || latest.current.callbackURL || here();
          const { url } = await client.signIn(provider, { callbackURL });
          window.location.assign(url);
          return { status: 'redirecting' };
        }
        let signed: SignedIn;
        if (options.method === 'otp') {
          const byPhone = 'phone' in options;
          const target = byPhone ? options.phone : options.email;
          if (options.code === undefined) {
            await (byPhone ? client.sendSmsOTP(target) : client.sendEmailOTP(target));
            setState((s) => ({ ...s, loading: false }));
            return { status: 'code_sent' };
          }
          signed = await (byPhone ? client.verifySmsOTP(target, options.code) : client.verifyEmailOTP(target, options.code));
        } else if (options.method === 'widget') {
          signed = await client.signInTelegramWidget(options.data);
        } else if ('credential' in options) {
          signed = await client.verifyToken(provider, options.method, {
            credential: options.credential,
            ...(options.nonce !== undefined ? { nonce: options.nonce } : {}),
          });
        } else {
          throw new PostgateError('INVALID_REQUEST', `Unknown sign-in method ${String((options as { method?: unknown }).method)}`, 0);
        }
        return { status: 'signed_in', user: await adopt(signed) };
      } catch (err) {
        return { status: 'error', error: holdTwoFactor(err) ?? fail(err) };
      }
    },
    [client, adopt, fail, holdTwoFactor],
  );

  const signOut = useCallback(async (): Promise<void> => {
    const t = store.get() ?? token;
    let error: PostgateError | null = null;
    if (t) {
      try {
        await client.signOut(t);
      } catch (err) {
        // An already ended session is signed out all the same.
        const e = toPostgateError(err);
        if (e.code !== 'SESSION_INVALID') error = e;
      }
    }
    store.clear();
    setToken(null);
    setState({ user: null, session: null, loading: false, error: error?.message ?? null, errorCode: error?.code ?? null });
    latest.current.onSignOut?.();
  }, [client, store, token]);

  const clearError = useCallback(() => setState((s) => ({ ...s, error: null, errorCode: null })), []);

  // A JWT refused with SESSION_INVALID: signed out, as a kept session that ended is at start.
  const getToken = useSessionJwt(client, token, () => {
    store.clear();
    setToken(null);
    setState({ user: null, session: null, loading: false, error: null, errorCode: null });
    latest.current.onSignOut?.();
  });

  const sendMagicLink = useSendMagicLink(client, latest, fail); // magic-links
  const passkeysValue = usePasskeys({ client, token, adopt, fail, hold: holdTwoFactor }); // passkeys

  const value = useMemo<PostgateContextValue>(
    () => ({ ...state, token, client, signIn, signOut, clearError, getToken, sendMagicLink, ...twoFactorValue, ...passkeysValue }),
    [state, token, client, signIn, signOut, clearError, getToken, sendMagicLink, twoFactorValue, passkeysValue],
  );
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>;
}

export function usePostgate(): PostgateContextValue {
  const v = useContext(Ctx);
  if (!v) throw new Error('usePostgate() must be used inside <PostgateProvider>');
  return v;
}
