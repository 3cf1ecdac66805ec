// What a sign-in provider is: its methods, default endpoints (each overridable
// per project), what each method needs configured, and its adapters.
import type { SignInProfile } from '../../control/store/index.js';
import type { RegionRule } from '../region.js';

export type Method = 'oauth' | 'id_token' | 'silent_token' | 'instant_token' | 'oidc' | 'widget' | 'miniapp' | 'otp' | 'magic_link' | 'webauthn';
export const allMethods: readonly Method[] = [
  'oauth',
  'id_token',
  'silent_token',
  'instant_token',
  'oidc',
  'widget',
  'miniapp',
  'otp',
  'magic_link',
  'webauthn',
];

export interface Endpoints {
  authorizationUrl?: string;
  tokenUrl?: string;
  userinfoUrl?: string;
  jwksUrl?: string;
  issuer?: string;
  apiUrl?: string;
}
export const endpointNames = ['authorizationUrl', 'tokenUrl', 'userinfoUrl', 'jwksUrl', 'issuer', 'apiUrl'] as const;

/** A project's provider settings, decrypted, endpoints merged over the defaults. */
export interface ProviderConfig {
  id: string;
  enabled: boolean;
  methods: Method[];
  clientId: string | null;
  clientSecret: string | null;
  botToken: string | null;
  endpoints: Endpoints;
  region: RegionRule;
}

export type Profile = Omit<SignInProfile, 'provider'>;
export type Field = 'clientId' | 'clientSecret' | 'botToken' | 'issuer';
export type Setting = Field | (typeof endpointNames)[number];

/** The settings a provider reads (see ProviderDef.settings). */
export function settingsOf(def: ProviderDef): Set<Setting> {
  const out = new Set<Setting>(def.settings ?? []);
  for (const k of Object.keys(def.defaults) as Setting[]) out.add(k);
  for (const fields of Object.values(def.requires)) for (const f of fields ?? []) out.add(f);
  return out;
}

export interface OAuthTokens {
  accessToken: string;
  /** Claims of a validated id_token (OpenID providers). */
  claims?: Record<string, unknown>;
}

export interface OAuthAdapter {
  /** OpenID Connect: an id_token with our nonce is required from the token endpoint. */
  oidc: boolean;
  scope?: string;
  clientAuth: 'basic' | 'post' | 'none';
  /** Extra parameters of the callback that the token request must carry (VK ID: device_id). */
  forwardCallbackParams?: string[];
  /** A token response that is not plain OAuth 2.0 (VK ID); default: oauth4webapi's processing. */
  readToken?(response: Response, state: string): Promise<OAuthTokens>;
  profile(cfg: ProviderConfig, tokens: OAuthTokens): Promise<Profile>;
}

/** A signed payload that must be used once: its digest is remembered until `expiresAt`. */
export interface OneShot {
  digest: string;
  expiresAt: number;
}

export type Verifier = (cfg: ProviderConfig, credential: string, opts: { nonce?: string; windowMs: number }) => Promise<Profile & { once?: OneShot }>;

export interface ProviderDef {
  id: string;
  name: string;
  methods: readonly Method[];
  /** The methods a project has before it chooses (default: all of `methods`); an opt-in method (magic_link) is left out. */
  defaultMethods?: readonly Method[];
  defaults: Endpoints;
  requires: Partial<Record<Method, Field[]>>;
  /**
   * Every setting the provider reads, when more than its defaults' endpoints and its
   * methods' required fields (an SMS gateway's URL and token; a generic issuer's endpoints).
   * `provider set` refuses the others: a flag that does nothing must not look accepted.
   */
  settings?: readonly Setting[];
  oauth?: OAuthAdapter;
  verify?: Partial<Record<Method, Verifier>>;
}

/** The methods a provider has for a project that never chose any. */
export const defaultMethodsOf = (def: ProviderDef): readonly Method[] => def.defaultMethods ?? def.methods;

/** A provider answered something we cannot accept (bad token, wrong audience, error reply). */
export class CredentialError extends Error {}

export const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() ? v.trim() : typeof v === 'number' ? String(v) : null);
export const joinName = (...parts: unknown[]): string | null => parts.map(str).filter(Boolean).join(' ') || null;
