// Who is calling: the API key of a request, resolved through an in-process cache
// that is invalidated at once when a key is revoked.
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../core/errors.js';
import type { Invalidator } from '../core/invalidation.js';
import { hashKey } from './keys.js';
import type { ApiKeyRow, Project, Store } from './store/store.js';

export interface Caller {
  key: ApiKeyRow;
  project: Project;
}

export interface KeyRequirement {
  kinds: ReadonlyArray<'live' | 'test'>;
  scopes: ReadonlyArray<'all' | 'auth'>;
}

export const MAIL_KEYS: KeyRequirement = { kinds: ['live'], scopes: ['all'] };

const CACHE_MAX = 50_000;

export class Access {
  private readonly keys = new Map<string, ApiKeyRow | null>();
  private readonly projects = new Map<string, Project>();

  constructor(private readonly store: Store, invalidator: Invalidator) {
    invalidator.subscribe('key', (hash) => this.keys.delete(hash));
    invalidator.subscribe('project', (id) => this.projects.delete(id));
  }

  /** The plain key a request carries, from `Authorization: Bearer` or `X-Service-Key`. */
  static keyOf(req: Pick<FastifyRequest, 'headers'>): string | undefined {
    const header = req.headers['x-service-key'];
    if (typeof header === 'string' && header) return header.trim();
    const auth = req.headers.authorization;
    if (typeof auth === 'string' && auth.startsWith('Bearer ')) return auth.slice(7).trim();
    return undefined;
  }

  async resolve(plain: string | undefined, need: KeyRequirement): Promise<Caller> {
    if (!plain) throw new ApiError('INVALID_API_KEY', 'Missing API key');
    const hash = hashKey(plain);
    let key = this.keys.get(hash);
    if (key === undefined) {
      key = (await this.store.keyByHash(hash)) ?? null;
      if (this.keys.size >= CACHE_MAX) this.keys.delete(this.keys.keys().next().value!);
      this.keys.set(hash, key);
    }
    if (!key || key.revokedAt !== null) throw new ApiError('INVALID_API_KEY', 'Invalid API key');
    if (!need.kinds.includes(key.kind) || !need.scopes.includes(key.scope)) {
      throw new ApiError('INVALID_API_KEY', `This ${key.kind} key${key.scope === 'auth' ? ' (auth scope)' : ''} cannot call this API`);
    }
    let project = this.projects.get(key.projectId);
    if (!project) {
      project = await this.store.projectById(key.projectId);
      if (!project) throw new ApiError('INVALID_API_KEY', 'Invalid API key');
      this.projects.set(project.id, project);
    }
    return { key, project };
  }
}
