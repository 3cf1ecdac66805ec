// @postgate/react: sign-in for React apps on postgate's auth API.
export {
  PostgateProvider,
  usePostgate,
  type PostgateConfig,
  type PostgateContextValue,
  type PostgateState,
  type SignInOptions,
  type SignInResult,
} from './react.js';
export { Button, SignInButton, ProviderMark, type ButtonProps, type ButtonProvider } from './button.js';
export { PostgateClient, createClient, type ClientOptions } from './client.js';
export { PostgateError } from './errors.js';
export { createCodeVerifier, codeChallengeOf, VERIFIER_KEY } from './binding.js';
export { marks, markOf, type Mark, type MarkShape } from './marks.js';
export type { User, Session, Provider, ProviderId, Method, SignedIn, TelegramWidgetData, HostedConfig } from './types.js';
export { registerPasskey, signInWithPasskey } from './passkeys.js';
export type { Passkey, PasskeyCreationOptions, PasskeyRequestOptions, PasskeyRegistration, PasskeyAssertion } from './types.js';
export type { PasskeysValue } from './passkeys-react.js';
export { pendingOf, type TwoFactorContext, type TwoFactorResult } from './two-factor.js';
export type { TwoFactorMethod, TwoFactorPending, TwoFactorPrompt, TotpSetup, TwoFactorStatus } from './types.js';
export { LINK_VERIFIER_KEY, type MagicLinkResult } from './magic-links.js';
export { JwtCache, REFRESH_BEFORE_MS } from './token.js';
export type { SessionJwt } from './types.js';
