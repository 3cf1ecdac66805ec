// A CommonJS module that another package requires eagerly, loaded only when first touched:
// for dependencies of our dependencies that cost memory in every process and serve a feature
// we never use (each caller says which).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * Puts a stand-in for `id`, as `from` resolves it, into the module cache: `from`'s require gets
 * an object that loads the real module on its first use and forwards everything to it.
 *
 * A caller that takes functions out of the module as it loads (`const { f } = require(id)`) would
 * load it at once through the stand-in: name them in `functions`, and the stand-in holds only
 * those, each loading the real module when first called. Or pass a function that makes the
 * stand-in's exports from the loader: for a module the caller calls as it loads (configureLater
 * below), or one whose common calls can be answered without it.
 */
export function deferModule(from: string, id: string, functions?: readonly string[] | ((load: () => any) => unknown)): void {
  const req = createRequire(require.resolve(from));
  const file = req.resolve(id);
  if (require.cache[file]) return;
  let real: object | undefined;
  const load = (): object => {
    if (!real) {
      delete require.cache[file];
      real = req(id) as object;
    }
    return real;
  };
  let exports: unknown;
  if (typeof functions === 'function') exports = functions(load);
  else if (functions)
    exports = Object.fromEntries(
      functions.map((name) => [name, (...args: unknown[]) => (load() as Record<string, (...a: unknown[]) => unknown>)[name]!(...args)]),
    );
  else
    exports = new Proxy(
      {},
      {
        get: (_t, p) => Reflect.get(load(), p),
        set: (_t, p, v) => Reflect.set(load(), p, v),
        has: (_t, p) => Reflect.has(load(), p),
        ownKeys: () => Reflect.ownKeys(load()),
        getOwnPropertyDescriptor: (_t, p) => {
          const d = Reflect.getOwnPropertyDescriptor(load(), p);
          // The stand-in's own target lacks the property: a proxy may only report it as configurable.
          return d && { ...d, configurable: true };
        },
      },
    );
  const Module = require('node:module') as new (id: string) => NodeJS.Module;
  const stand = new Module(file);
  Object.assign(stand, { filename: file, loaded: true, exports });
  require.cache[file] = stand;
}

/**
 * A stand-in for a factory module whose instance is configured as it is made
 * (`require('linkify-it')().tlds(list).add(...)`): the instance records the `configure` calls
 * and becomes real (the module loaded, the factory called, the calls replayed) when anything
 * else of it is first used.
 */
export function configureLater(load: () => any, configure: readonly string[]): (...args: unknown[]) => object {
  return (...args: unknown[]) => {
    const calls: Array<[string, unknown[]]> = [];
    let real: any;
    const instance = (): any => {
      if (!real) {
        real = load()(...args);
        for (const [method, a] of calls) real[method](...a);
      }
      return real;
    };
    const recorder: object = new Proxy(
      {},
      {
        get: (_t, p) => {
          if (!real && typeof p === 'string' && configure.includes(p))
            return (...a: unknown[]) => {
              calls.push([p, a]);
              return recorder;
            };
          const r = instance();
          const v = r[p];
          return typeof v === 'function' ? v.bind(r) : v;
        },
        has: (_t, p) => p in instance(),
      },
    );
    return recorder;
  };
}
