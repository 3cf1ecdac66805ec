// A project's auth configuration: providers (secrets encrypted at rest,
// endpoint overrides kept apart from the defaults), allowed origins and
// settings. Validated here, once, for the admin API.
import { invalid, notFound } from '../core/errors.js';
import { clock } from '../core/clock.js';
import { parseMailbox } from '../common/address.js';
import type { SignInStore, ProviderRow } from '../control/store/index.js';
import type { AuthCrypto } from './crypto.js';
import { settings } from './settings.js';
import { parseCidr, type RegionRule } from './region.js';
import { onByDefault, providers } from './providers/index.js';
import {
  defaultMethodsOf,
  endpointNames,
  settingsOf,
  type Endpoints,
  type Field,
  type Method,
  type ProviderConfig,
  type ProviderDef,
} from './providers/types.js';

export interface ProviderInput extends Endpoints {
  clientId?: string;
  clientSecret?: string;
  botToken?: string;
  methods?: string[];
  allowCountries?: string[];
  denyCountries?: string[];
  allowCidrs?: string[];
  denyCidrs?: string[];
}

/** What the admin API shows of a provider: never its secrets. */
export interface ProviderView {
  provider: string;
  enabled: boolean;
  methods: string[];
  clientId: string | null;
  hasClientSecret: boolean;
  hasBotToken: boolean;
  endpoints: Endpoints;
  region: RegionRule;
}

export type TwoFactorMode = 'off' | 'optional' | 'required';

export interface EffectiveSettings {
  sessionTtlMs: number;
  codeFrom: string | null;
  telegramWindowMs: number;
  requireCodeVerifier: boolean;
  /** off (the default): no second factor; optional: users may enrol; required: every user signs in with one. */
  twoFactor: TwoFactorMode;
  /** The project's JWTs' `aud` (auth/jwt); null: the default, `defaultJwtAudience(slug)`. */
  jwtAudience: string | null;
  jwtTtlMs: number;
}

export interface SettingsInput {
  sessionTtlSeconds?: number | null;
  codeFrom?: string | null;
  telegramWindowSeconds?: number | null;
  /** null restores the default (on). */
  requireCodeVerifier?: boolean | null;
  /** null restores the default (off). */
  twoFactor?: TwoFactorMode | null;
  /** null restores the default (`postgate:<project slug>`). */
  jwtAudience?: string | null;
  /** 30 to 600; null restores the default (300). */
  jwtTtlSeconds?: number | null;
}

/** The default `aud` of a project's JWTs: its slug, namespaced. */
export const defaultJwtAudience = (slug: string): string => `postgate:${slug}`;

const regionKeys = ['allowCountries', 'denyCountries', 'allowCidrs', 'denyCidrs'] as const;

export function defOf(id: string): ProviderDef {
  const def = providers.get(id);
  if (!def) throw invalid(`Unknown provider ${JSON.stringify(id)}; known: ${[...providers.keys()].join(', ')}`);
  return def;
}

/** `https://app.example.com[:port]` exactly; anything with a path, query or credentials is refused. */
export function normalizeOrigin(input: string): string {
  let u: URL;
  try {
    u = new URL(input.trim());
  } catch {
    throw invalid(`Not an origin: ${JSON.stringify(input)}`);
  }
  if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.username || u.password || (u.pathname !== '/' && u.pathname !== '') || u.search || u.hash) {
    throw invalid(`An origin is scheme://host[:port] (http or https), got ${JSON.stringify(input)}`);
  }
  return u.origin;
}

/**
 * An exact callback URL (http or https, no credentials, no fragment), in the form
 * `new URL()` writes it: sign-ins may return only to a registered one when a project has any.
 */
export function normalizeCallbackUrl(input: string): string {
  let u: URL;
  try {
    u = new URL(input.trim());
  } catch {
    throw invalid(`Not an absolute URL: ${JSON.stringify(input)}`);
  }
  if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.username || u.password || input.includes('#')) {
    throw invalid(`A callback URL is http(s)://host[:port]/path[?query], without credentials or fragment; got ${JSON.stringify(input)}`);
  }
  return u.toString();
}

function checkUrl(name: string, value: string): void {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw invalid(`${name} is not a URL`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw invalid(`${name} must be http(s)`);
}

const missing = (def: ProviderDef, method: Method, row: Pick<ProviderRow, 'clientId' | 'clientSecret' | 'botToken' | 'endpoints'>): Field[] =>
  (def.requires[method] ?? []).filter((f) => (f === 'issuer' ? !row.endpoints.issuer && !def.defaults.issuer : !row[f]));

export class ProjectAuthConfig {
  constructor(
    private readonly store: SignInStore,
    private readonly crypto: AuthCrypto,
  ) {}

  private toConfig(def: ProviderDef, row: ProviderRow | undefined): ProviderConfig {
    return {
      id: def.id,
      enabled: row ? row.enabled : onByDefault.has(def.id),
      methods: (row?.methods ?? (onByDefault.has(def.id) ? defaultMethodsOf(def) : [])) as Method[],
      clientId: row?.clientId ?? null,
      clientSecret: row?.clientSecret ? this.crypto.decrypt(row.clientSecret) : null,
      botToken: row?.botToken ? this.crypto.decrypt(row.botToken) : null,
      endpoints: { ...def.defaults, ...row?.endpoints },
      region: (row?.region ?? {}) as RegionRule,
    };
  }

  /** The provider's settings if it is enabled for the project. */
  async provider(projectId: string, id: string): Promise<ProviderConfig | undefined> {
    const def = providers.get(id);
    if (!def) return undefined;
    const cfg = this.toConfig(def, await this.store.provider(projectId, id));
    return cfg.enabled ? cfg : undefined;
  }

  async enabled(projectId: string): Promise<ProviderConfig[]> {
    const rows = new Map((await this.store.providers(projectId)).map((r) => [r.provider, r]));
    return [...providers.values()].map((def) => this.toConfig(def, rows.get(def.id))).filter((c) => c.enabled && c.methods.length);
  }

  async list(projectId: string): Promise<ProviderView[]> {
    const rows = new Map((await this.store.providers(projectId)).map((r) => [r.provider, r]));
    const ids = [...providers.keys()].filter((id) => rows.has(id) || onByDefault.has(id));
    return ids.map((id) => this.view(defOf(id), rows.get(id)));
  }

  private view(def: ProviderDef, row: ProviderRow | undefined): ProviderView {
    const cfg = this.toConfig(def, row);
    return {
      provider: def.id,
      enabled: cfg.enabled,
      methods: cfg.methods,
      clientId: cfg.clientId,
      hasClientSecret: !!row?.clientSecret,
      hasBotToken: !!row?.botToken,
      endpoints: row?.endpoints ?? {},
      region: cfg.region,
    };
  }

  /**
   * Enables a provider with the given settings merged over its current ones
   * (an empty string or list clears a setting). Without `methods` the current
   * methods stay (those whose settings are still present); a new provider gets
   * every method whose settings are present.
   */
  async set(projectId: string, id: string, input: ProviderInput): Promise<ProviderView> {
    const def = defOf(id);
    const accepted = settingsOf(def);
    const unused = ([...endpointNames, 'clientId', 'clientSecret', 'botToken'] as const).filter((k) => input[k] !== undefined && !accepted.has(k));
    if (unused.length) {
      throw invalid(
        `${def.name} does not use ${unused.join(', ')}; its settings are ${accepted.size ? [...accepted].join(', ') : 'methods and region rules only'}`,
      );
    }
    const old = await this.store.provider(projectId, id);
    const endpoints: Record<string, string> = { ...old?.endpoints };
    for (const name of endpointNames) {
      const v = input[name];
      if (v === undefined) continue;
      if (v === '') delete endpoints[name];
      else {
        checkUrl(name, v);
        endpoints[name] = v.replace(/\/+$/, '') || v;
      }
    }
    const region: Record<string, string[]> = { ...old?.region };
    for (const k of regionKeys) {
      const v = input[k];
      if (v === undefined) continue;
      const list = v.map((s) => s.trim()).filter(Boolean);
      if (k.endsWith('Countries')) {
        for (const c of list) if (!/^[A-Za-z]{2}$/.test(c)) throw invalid(`${k}: ${JSON.stringify(c)} is not an ISO 3166-1 alpha-2 code`);
        region[k] = list.map((c) => c.toUpperCase());
      } else {
        for (const c of list) if (!parseCidr(c)) throw invalid(`${k}: ${JSON.stringify(c)} is not a CIDR block`);
        region[k] = list;
      }
      if (!region[k]!.length) delete region[k];
    }
    const secret = (v: string | undefined, prev: string | null | undefined) => (v === undefined ? (prev ?? null) : v === '' ? null : this.crypto.encrypt(v));
    const row: ProviderRow = {
      provider: id,
      enabled: true,
      methods: [],
      clientId: input.clientId === undefined ? (old?.clientId ?? null) : input.clientId || null,
      clientSecret: secret(input.clientSecret, old?.clientSecret),
      botToken: secret(input.botToken, old?.botToken),
      endpoints,
      region,
      updatedAt: clock.now(),
    };
    if (input.methods) {
      for (const m of input.methods)
        if (!def.methods.includes(m as Method)) throw invalid(`${def.name} supports the methods ${def.methods.join(', ')}; not ${m}`);
      for (const m of input.methods) {
        const lack = missing(def, m as Method, row);
        if (lack.length) throw invalid(`Method ${m} of ${id} needs ${lack.join(', ')}`);
      }
      row.methods = [...new Set(input.methods)];
    } else {
      const keep = old?.methods.length ? old.methods : defaultMethodsOf(def);
      row.methods = keep.filter((m) => !missing(def, m as Method, row).length);
      if (!row.methods.length) {
        throw invalid(`Nothing to enable for ${id}: ${def.methods.map((m) => `${m} needs ${(def.requires[m as Method] ?? []).join(', ')}`).join('; ')}`);
      }
    }
    await this.store.putProvider(projectId, row);
    return this.view(def, row);
  }

  async disable(projectId: string, id: string): Promise<ProviderView> {
    const def = defOf(id);
    const old = await this.store.provider(projectId, id);
    if (!old && !onByDefault.has(id)) throw notFound(`Provider ${id} is not configured`);
    const row: ProviderRow = old
      ? { ...old, enabled: false, updatedAt: clock.now() }
      : {
          provider: id,
          enabled: false,
          methods: [...defaultMethodsOf(def)],
          clientId: null,
          clientSecret: null,
          botToken: null,
          endpoints: {},
          region: {},
          updatedAt: clock.now(),
        };
    await this.store.putProvider(projectId, row);
    return this.view(def, row);
  }

  async settings(projectId: string): Promise<EffectiveSettings> {
    const s = await this.store.settings(projectId);
    return {
      sessionTtlMs: s.sessionTtlSeconds ? s.sessionTtlSeconds * 1000 : settings.sessionTtlMs,
      codeFrom: s.codeFrom,
      telegramWindowMs: s.telegramWindowSeconds ? s.telegramWindowSeconds * 1000 : settings.telegramWindowMs,
      // Required unless the project turned it off: the SDK and the embed script always bind. Projects that existed
      // before this default keep it off (migration 0015) until `auth set --require-code-verifier on`.
      requireCodeVerifier: s.requireCodeVerifier ?? true,
      twoFactor: s.twoFactor ?? 'off',
      jwtAudience: s.jwtAudience,
      jwtTtlMs: (s.jwtTtlSeconds ?? settings.jwtTtlSeconds) * 1000,
    };
  }

  /** Merges the given settings over the current ones; null restores a default. */
  async putSettings(projectId: string, input: SettingsInput): Promise<EffectiveSettings> {
    if (input.codeFrom && !parseMailbox(input.codeFrom)) throw invalid('codeFrom is not a valid address');
    if (input.twoFactor != null && !['off', 'optional', 'required'].includes(input.twoFactor)) throw invalid('twoFactor is off, optional or required');
    if (input.jwtTtlSeconds != null && (input.jwtTtlSeconds < 30 || input.jwtTtlSeconds > settings.jwtMaxTtlSeconds)) {
      throw invalid(`jwtTtlSeconds is between 30 and ${settings.jwtMaxTtlSeconds}`);
    }
    const cur = await this.store.settings(projectId);
    const pick = <K extends keyof SettingsInput>(k: K) => (input[k] === undefined ? cur[k] : (input[k] ?? null));
    await this.store.putSettings(
      projectId,
      {
        sessionTtlSeconds: pick('sessionTtlSeconds') as number | null,
        codeFrom: pick('codeFrom') as string | null,
        telegramWindowSeconds: pick('telegramWindowSeconds') as number | null,
        requireCodeVerifier: input.requireCodeVerifier === undefined ? cur.requireCodeVerifier : input.requireCodeVerifier,
        twoFactor: input.twoFactor === undefined ? cur.twoFactor : input.twoFactor === 'off' ? null : input.twoFactor,
        jwtAudience: pick('jwtAudience') as string | null,
        jwtTtlSeconds: pick('jwtTtlSeconds') as number | null,
      },
      clock.now(),
    );
    return this.settings(projectId);
  }
}
