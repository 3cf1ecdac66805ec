// The auth API (spec/auth-api.md) as a Fastify plugin registered by control.
import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../core/config.js';
import type { Logger } from '../core/log.js';
import type { Invalidator } from '../core/invalidation.js';
import type { Store } from '../control/store/store.js';
import type { Access } from '../control/access.js';
import type { MailPipeline } from '../control/mail/pipeline.js';

export interface AuthPluginOptions {
  config: Config;
  log: Logger;
  store: Store;
  access: Access;
  pipeline: MailPipeline;
  invalidator: Invalidator;
  secret: string;
  adminToken: string;
}

export const authPlugin: FastifyPluginAsync<AuthPluginOptions> = async () => {};
