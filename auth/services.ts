// The auth area's services, built once per process by createAuth (plugin.ts).
import type { Config } from '../core/config.js';
import type { Logger } from '../core/log.js';
import type { Invalidator } from '../core/invalidation.js';
import type { KeyAuthenticator } from '../control/api-keys/authenticate.js';
import type { FastLane } from '../control/http/fast-lane.js';
import type { SignInStore, Store } from '../control/store/index.js';
import { AuthCrypto } from './crypto.js';
import { ProjectAuthConfig } from './project-config.js';
import { Sessions } from './sessions.js';
import { Codes, type SendSystemMail } from './codes.js';
import type { Limiter } from './limiter.js';
import { OAuthFlows } from './oauth.js';
import { AuthEvents } from './events.js';
import { KeylessLimits } from './keyless.js';
// <passkeys: import>
import { PasskeyService } from './passkeys/service.js';
// </passkeys>
// <two-factor: import>
import { TwoFactorService } from './two-factor/service.js';
import { twoFactorGate } from './two-factor/gate.js';
// </two-factor>
// <magic-links: import>
import { MagicLinkService } from './magic-links/service.js';
// </magic-links>
// <users: import>
import { UserManagement } from './users/service.js';
// </users>
// <signing-keys: import>
import { SigningKeys } from './jwt/keys.js';
// </signing-keys>

/** What the composition root gives the auth capability. */
export interface AuthDeps {
  config: Config;
  log: Logger;
  store: Store;
  access: KeyAuthenticator;
  invalidator: Invalidator;
  secret: string;
  /** Emails sign-in codes (control implements it with its mail pipeline). */
  sendSystemMail: SendSystemMail;
  /** The process's fixed-window limiter: code sends and checks are counted on it. */
  limiter: Limiter;
  /** Called when a project reaches its hourly cap of sign-in code sends (an operator alert metric). */
  onCodeSendsCapped?: (projectSlug: string) => void;
  /** Where GET /session answers from memory without Fastify; absent, Fastify answers every check. */
  fastLane?: FastLane;
}

export interface AuthServices {
  config: Config;
  log: Logger;
  store: SignInStore;
  projectsStore: Store;
  access: KeyAuthenticator;
  projects: ProjectAuthConfig;
  sessions: Sessions;
  codes: Codes;
  oauth: OAuthFlows;
  /** Sign-in events: the audit log and auth webhooks (auth/events.ts). */
  events: AuthEvents;
  /** Per-address and per-project limits of the routes that take no key (auth/keyless.ts). */
  keyless: KeylessLimits;
  crypto: AuthCrypto;
  /** Sends sign-in emails (magic links too) through control's mail pipeline. */
  sendSystemMail: SendSystemMail;
  limiter: Limiter;
  // <passkeys: service>
  /** Passkeys (WebAuthn): ceremonies and credentials (auth/passkeys). */
  passkeys: PasskeyService;
  // </passkeys>
  // <two-factor: service>
  /** Second factors: TOTP and backup codes, the gate that holds sign-ins for them (auth/two-factor). */
  twoFactor: TwoFactorService;
  // </two-factor>
  // <magic-links: service>
  /** Emailed single-use sign-in links (auth/magic-links). */
  magicLinks: MagicLinkService;
  // </magic-links>
  // <users: service>
  /** User management (auth/users): the project backend's and the operator's; its ban gate refuses sign-ins. */
  users: UserManagement;
  // </users>
  // <signing-keys: service>
  /** The JWT signing keys (auth/jwt): one set for the deployment, cached per node. */
  signingKeys: SigningKeys;
  // </signing-keys>
}

export function createAuthServices(o: AuthDeps): AuthServices {
  const store = o.store.signIn;
  const crypto = new AuthCrypto(o.secret);
  const projects = new ProjectAuthConfig(store, crypto);
  const events = new AuthEvents({ audit: o.store.audit, limiter: o.limiter, log: o.log });
  const sessions = new Sessions(store, o.invalidator, events);
  const codes = new Codes({
    store,
    domains: o.store.domains,
    crypto,
    limiter: o.limiter,
    sendSystemMail: o.sendSystemMail,
    config: o.config,
    log: o.log,
    onCapped: o.onCodeSendsCapped,
  });
  const oauth = new OAuthFlows({ config: o.config, log: o.log, store, crypto, sessions, projects, events });
  const keyless = new KeylessLimits(o.limiter, o.config.auth);
  // Each feature's service, and its gate on new sessions in this order: a ban refuses before a second factor is asked.
  // <users: construct and gate>
  const users = new UserManagement({ store: o.store.users, sessions, events });
  sessions.addGate(users.gate);
  // </users>
  // <passkeys: construct and gate>
  const passkeys = new PasskeyService(o.store.passkeys);
  // </passkeys>
  // <two-factor: construct and gate>
  const twoFactor = new TwoFactorService({ store: o.store.twoFactor, users: store, crypto, projects, sessions, events, limiter: o.limiter });
  sessions.addGate(twoFactorGate(twoFactor));
  // </two-factor>
  // <magic-links: construct and gate>
  const magicLinks = new MagicLinkService({
    store: o.store.magicLinks,
    codes,
    crypto,
    sessions,
    events,
    config: o.config,
    log: o.log,
  });
  // </magic-links>
  // <signing-keys: construct and gate>
  const signingKeys = new SigningKeys(o.store.signingKeys, o.secret, o.invalidator, o.log, o.config.auth.signingKeyRotationDays * 86_400_000);
  // </signing-keys>
  return {
    config: o.config,
    log: o.log,
    store,
    projectsStore: o.store,
    access: o.access,
    projects,
    sessions,
    codes,
    oauth,
    events,
    keyless,
    crypto,
    sendSystemMail: o.sendSystemMail,
    limiter: o.limiter,
    // <passkeys: service field>
    passkeys,
    // </passkeys>
    // <two-factor: service field>
    twoFactor,
    // </two-factor>
    // <magic-links: service field>
    magicLinks,
    // </magic-links>
    // <users: service field>
    users,
    // </users>
    // <signing-keys: service field>
    signingKeys,
    // </signing-keys>
  };
}
