// The auth area's services, built once per process by the plugin.
import type { Config } from '../core/config.js';
import type { Logger } from '../core/log.js';
import type { Invalidator } from '../core/invalidation.js';
import type { Access } from '../control/access.js';
import type { MailPipeline } from '../control/mail/pipeline.js';
import type { AuthStore } from '../control/store/auth.js';
import type { Store } from '../control/store/store.js';
import { AuthCrypto } from './crypto.js';
import { RateLimiter } from './limits.js';
import { ProjectAuthConfig } from './project-config.js';
import { Sessions } from './sessions.js';
import { Codes } from './codes.js';
import { OAuthFlows } from './oauth.js';

export interface AuthContext {
  config: Config;
  log: Logger;
  store: AuthStore;
  projectsStore: Store;
  access: Access;
  projects: ProjectAuthConfig;
  sessions: Sessions;
  codes: Codes;
  oauth: OAuthFlows;
}

export function createAuthContext(o: {
  config: Config;
  log: Logger;
  store: Store;
  access: Access;
  pipeline: MailPipeline;
  invalidator: Invalidator;
  secret: string;
  onCodeSendsCapped?: (projectSlug: string) => void;
}): AuthContext {
  const store = o.store.auth;
  const crypto = new AuthCrypto(o.secret);
  const projects = new ProjectAuthConfig(store, crypto);
  const sessions = new Sessions(store, o.invalidator);
  const codes = new Codes({
    store,
    domains: o.store,
    crypto,
    limiter: new RateLimiter(),
    pipeline: o.pipeline,
    config: o.config,
    log: o.log,
    onCapped: o.onCodeSendsCapped,
  });
  const oauth = new OAuthFlows({ config: o.config, log: o.log, store, crypto, sessions, projects });
  return { config: o.config, log: o.log, store, projectsStore: o.store, access: o.access, projects, sessions, codes, oauth };
}
