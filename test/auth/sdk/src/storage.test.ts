// auth/sdk/src/storage.ts: where the SDK keeps the session token; outside a browser (and where a
// browser refuses storage) it falls back to memory.
import { afterEach, expect, it, vi } from 'vitest';
import { tokenStore } from '../../../../auth/sdk/src/storage.js';

afterEach(() => vi.unstubAllGlobals());

/** A Storage of the test's own, as a browser's sessionStorage or localStorage. */
function fakeStorage(refuse = false) {
  const m = new Map<string, string>();
  return {
    getItem: (k: string) => m.get(k) ?? null,
    setItem: (k: string, v: string) => {
      if (refuse) throw new Error('QuotaExceededError');
      m.set(k, v);
    },
    removeItem: (k: string) => void m.delete(k),
    map: m,
  };
}

it('outside a browser every kind keeps the token in memory', () => {
  for (const kind of ['local', 'session', 'memory'] as const) {
    const s = tokenStore(kind, 'pg.token');
    expect(s.get()).toBeNull();
    s.set('pgs_1');
    expect(s.get()).toBe('pgs_1');
    s.clear();
    expect(s.get()).toBeNull();
  }
});

it('in a browser, local and session storage under the key; memory never touches them', () => {
  const local = fakeStorage();
  const session = fakeStorage();
  vi.stubGlobal('window', { localStorage: local, sessionStorage: session });
  tokenStore('local', 'pg.token').set('a');
  tokenStore('session', 'pg.token').set('b');
  tokenStore('memory', 'pg.token').set('c');
  expect([...local.map]).toEqual([['pg.token', 'a']]);
  expect([...session.map]).toEqual([['pg.token', 'b']]);
  // Another store of the same kind and key (a page reload) reads it back.
  expect(tokenStore('local', 'pg.token').get()).toBe('a');
  tokenStore('local', 'pg.token').clear();
  expect(local.map.size).toBe(0);
});

it('a browser that refuses storage (private mode, a sandboxed frame): memory, without an error', () => {
  vi.stubGlobal('window', { localStorage: fakeStorage(true) });
  const s = tokenStore('local', 'pg.token');
  expect(() => s.set('pgs_1')).not.toThrow();
  expect(s.get()).toBe('pgs_1');
  vi.stubGlobal('window', {
    get localStorage(): Storage {
      throw new Error('SecurityError');
    },
  });
  const t = tokenStore('local', 'pg.token');
  t.set('pgs_2');
  expect(t.get()).toBe('pgs_2');
});
