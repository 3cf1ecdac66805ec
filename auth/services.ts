// The auth area's services, built once per process by createAuth (plugin.ts).
import type { FastifyRequest } from 'fastify';
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
import { PasskeyService } from './passkeys/service.js';
import { TwoFactorService } from './two-factor/service.js';
import { twoFactorGate } from './two-factor/gate.js';
import { MagicLinkService } from './magic-links/service.js';
import { UserManagement } from './users/service.js';
import { SigningKeys } from './jwt/keys.js';

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
  /** Writes an admin request's change to the operator audit log (control/operations/audit.ts: who, what, on what). */
  operatorAudit: OperatorAudit;
}

/** Appends an operator audit entry for a change an admin request made, after it took effect. */
export type OperatorAudit = (req: FastifyRequest, a: { action: string; target: string; details?: Record<string, unknown> }) => Promise<void>;

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
  operatorAudit: OperatorAudit;
  /** Passkeys (WebAuthn): ceremonies and credentials (auth/passkeys). */
  passkeys: PasskeyService;
  /** Second factors: TOTP and backup codes, the gate that holds sign-ins for them (auth/two-factor). */
  twoFactor: TwoFactorService;
  /** Emailed single-use sign-in links (auth/magic-links). */
  magicLinks: MagicLinkService;
  /** User management (auth/users): the project backend's and the operator's; its ban gate refuses sign-ins. */
  users: UserManagement;
  /** The JWT signing keys (auth/jwt): one set for the deployment, cached per node. */
  signingKeys: SigningKeys;
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
  const users = new UserManagement({ store: o.store.users, sessions, events });
  sessions.addGate(users.gate);
  const passkeys = new PasskeyService(o.store.passkeys);
  const twoFactor = new TwoFactorService({ store: o.store.twoFactor, users: store, crypto, projects, sessions, events, limiter: o.limiter });
  sessions.addGate(twoFactorGate(twoFactor));
  const magicLinks = new MagicLinkService({
    store: o.store.magicLinks,
    codes,
    crypto,
    sessions,
    events,
    config: o.config,
    log: o.log,
  });
  const signingKeys = new SigningKeys(o.store.signingKeys, o.secret, o.invalidator, o.log, o.config.auth.signingKeyRotationDays * 86_400_000);
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
    operatorAudit: o.operatorAudit,
    passkeys,
    twoFactor,
    magicLinks,
    users,
    signingKeys,
  };
}
