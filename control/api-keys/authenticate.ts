// Who is calling: the API key of a request, resolved through an in-process cache
// that is invalidated at once when a key is revoked.
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { ApiError } from '../../core/errors.js';
import type { Invalidator } from '../../core/invalidation.js';
import { hashKey } from './issue.js';
import type { ApiKeyRow, KeyScope, Project, Store } from '../store/index.js';
import { fromHeaders } from './credentials.js';

export interface Caller {
  key: ApiKeyRow;
  project: Project;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by KeyAuthenticator.hook on key-protected routes. */
    caller?: Caller;
  }
}

export interface KeyRequirement {
  kinds: ReadonlyArray<'live' | 'test'>;
  scopes: ReadonlyArray<KeyScope>;
}

export const MAIL_KEYS: KeyRequirement = { kinds: ['live'], scopes: ['all'] };

const CACHE_MAX = 50_000;

const fits = (key: ApiKeyRow, need: KeyRequirement) => need.kinds.includes(key.kind) && need.scopes.includes(key.scope);

export class KeyAuthenticator {
  private readonly keys = new Map<string, ApiKeyRow | null>();
  private readonly projects = new Map<string, Project>();

  constructor(
    private readonly store: Store,
    invalidator: Invalidator,
  ) {
    invalidator.subscribe('key', (hash) => this.keys.delete(hash));
    invalidator.subscribe('project', (id) => this.projects.delete(id));
    // Invalidations may have been missed (Redis away): nothing cached is trusted.
    invalidator.onReset(() => {
      this.keys.clear();
      this.projects.clear();
    });
  }

  async resolve(plain: string | undefined, need: KeyRequirement): Promise<Caller> {
    if (!plain) throw new ApiError('INVALID_API_KEY', 'Missing API key');
    const hash = hashKey(plain);
    let key = this.keys.get(hash);
    if (key === undefined) {
      key = (await this.store.apiKeys.byHash(hash)) ?? null;
      if (this.keys.size >= CACHE_MAX) this.keys.delete(this.keys.keys().next().value!);
      this.keys.set(hash, key);
    }
    const checked = this.check(key, need);
    let project = this.projects.get(checked.projectId);
    if (!project) {
      project = await this.store.projects.byId(checked.projectId);
      if (!project) throw new ApiError('INVALID_API_KEY', 'Invalid API key');
      this.projects.set(project.id, project);
    }
    return { key: checked, project };
  }

  /** The caller when both its key and project are in the cache (the usual case); throws for a bad key. */
  cached(plain: string | undefined, need: KeyRequirement): Caller | undefined {
    if (!plain) throw new ApiError('INVALID_API_KEY', 'Missing API key');
    const key = this.keys.get(hashKey(plain));
    return key === undefined ? undefined : this.cachedCaller(this.check(key, need));
  }

  /** The caller when its key is cached and may make this call, else undefined (never throws: the ordinary path then answers). */
  allowedFromCache(plain: string | undefined, need: KeyRequirement): Caller | undefined {
    const key = plain ? this.keys.get(hashKey(plain)) : undefined;
    return key && key.revokedAt === null && fits(key, need) ? this.cachedCaller(key) : undefined;
  }

  private cachedCaller(key: ApiKeyRow): Caller | undefined {
    const project = this.projects.get(key.projectId);
    return project && { key, project };
  }

  private check(key: ApiKeyRow | null, need: KeyRequirement): ApiKeyRow {
    if (!key || key.revokedAt !== null) throw new ApiError('INVALID_API_KEY', 'Invalid API key');
    if (!fits(key, need)) {
      throw new ApiError('INVALID_API_KEY', `This ${key.kind} key${key.scope === 'all' ? '' : ` (${key.scope} scope)`} cannot call this API`);
    }
    return key;
  }

  /**
   * The onRequest hook of key-protected routes: sets req.caller, then runs `then` (e.g. the
   * rate limit). Callback style with a synchronous cache hit: no promise per request.
   */
  hook(need: KeyRequirement, then?: (req: FastifyRequest, reply: FastifyReply) => void): onRequestHookHandler {
    return (req, reply, done) => {
      const plain = fromHeaders(req.headers);
      let caller: Caller | undefined;
      try {
        caller = this.cached(plain, need);
        if (caller) {
          req.caller = caller;
          then?.(req, reply);
        }
      } catch (err) {
        done(err as Error);
        return;
      }
      if (caller) {
        done();
        return;
      }
      this.resolve(plain, need)
        .then((c) => {
          req.caller = c;
          then?.(req, reply);
          done();
        })
        .catch((err: Error) => done(err));
    };
  }
}
