// What the public hosted endpoints know about a request: the project named by
// its slug, a stand-in caller for the auth services (the widget has no key; it
// acts on the project's live environment), and the origin rules.
import type { FastifyRequest } from 'fastify';
import { ApiError, notFound } from '../../core/errors.js';
import type { Caller } from '../../control/api-keys/authenticate.js';
import type { Project } from '../../control/store/index.js';
import type { AuthServices } from '../services.js';
import { connectionIp, regionAllows } from '../region.js';
import type { Method, ProviderConfig } from '../providers/types.js';

export class Hosted {
  /** postgate's own origins (base and id URL): the widget calls from there. */
  readonly ownOrigins: ReadonlySet<string>;

  constructor(readonly ctx: AuthServices) {
    this.ownOrigins = new Set([new URL(ctx.config.baseUrl).origin, new URL(ctx.config.idUrl).origin]);
  }

  async project(slug: string): Promise<Project> {
    const p = await this.ctx.projectsStore.projects.bySlug(slug);
    if (!p) throw notFound(`No project with the slug ${JSON.stringify(slug)}`);
    return p;
  }

  /**
   * The caller the auth services expect, for the project's live environment.
   * Scope `auth`, so nothing a browser sends (X-Service-Client-IP) is trusted.
   */
  caller(project: Project): Caller {
    return {
      project,
      key: { id: 'hosted-widget', projectId: project.id, kind: 'live', scope: 'auth', hint: 'hosted widget', createdAt: project.createdAt, revokedAt: null },
    };
  }

  originsOf(projectId: string): Promise<string[]> {
    return this.ctx.store.origins(projectId);
  }

  /** True when a browser on `origin` may use the project: postgate itself or one of its allowed origins. */
  async originAllowed(projectId: string, origin: string): Promise<boolean> {
    return this.ownOrigins.has(origin) || this.ctx.store.hasOrigin(projectId, origin);
  }

  /**
   * The keyless hosted calls that act (start a sign-in, mail a code, check one) come from the widget
   * in a browser, which always sends Origin on a POST: without one it is a script, and without a key
   * a script must not make us mail any address it likes.
   */
  async requireRequestOrigin(req: FastifyRequest, projectId: string): Promise<void> {
    if (typeof req.headers.origin !== 'string')
      throw new ApiError('REDIRECT_NOT_ALLOWED', 'Hosted sign-in calls must come from a browser page on an allowed origin (no Origin header)');
    return this.checkRequestOrigin(req, projectId);
  }

  /** Refuses a browser request whose Origin header the project does not allow (servers send none). */
  async checkRequestOrigin(req: FastifyRequest, projectId: string): Promise<void> {
    const origin = req.headers.origin;
    if (typeof origin !== 'string' || (await this.originAllowed(projectId, origin))) return;
    throw new ApiError('REDIRECT_NOT_ALLOWED', `The origin ${origin} is not allowed for this project (allow it with: postgate origin allow ${origin})`);
  }

  /** The provider's settings when `method` is enabled and the user's region may use it (as the key routes check). */
  async enabled(req: FastifyRequest, projectId: string, providerId: string, method: Method): Promise<ProviderConfig> {
    const cfg = await this.ctx.projects.provider(projectId, providerId);
    if (!cfg?.methods.includes(method)) throw new ApiError('PROVIDER_NOT_ENABLED', `${providerId} with method ${method} is not enabled for this project`);
    if (!regionAllows(cfg.region, connectionIp(req))) throw new ApiError('REGION_NOT_ALLOWED', `${providerId} is not available in your region`);
    return cfg;
  }
}

export { withCode } from '../browser-binding.js';
