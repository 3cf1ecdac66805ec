// Where the session token is kept between page loads. localStorage by default;
// storage a browser refuses (private modes, sandboxed frames) falls back to memory.

export type StorageKind = 'local' | 'session' | 'memory';

export interface TokenStore {
  get(): string | null;
  set(token: string): void;
  clear(): void;
}

export function tokenStore(kind: StorageKind, key: string): TokenStore {
  let memory: string | null = null;
  const area = (): Storage | null => {
    if (kind === 'memory' || typeof window === 'undefined') return null;
    try {
      return kind === 'session' ? window.sessionStorage : window.localStorage;
    } catch {
      return null;
    }
  };
  return {
    get: () => {
      try {
        return area()?.getItem(key) ?? memory;
      } catch {
        return memory;
      }
    },
    set: (token) => {
      memory = token;
      try {
        area()?.setItem(key, token);
      } catch {
        /* memory only */
      }
    },
    clear: () => {
      memory = null;
      try {
        area()?.removeItem(key);
      } catch {
        /* memory only */
      }
    },
  };
}
