// The data directory holds keys, sign-in codes in queued mail and every email: only
// the service's own user may read it. A umask of 077 makes everything created from
// here on 0700/0600 (children inherit it); an existing directory is tightened once.
import fs from 'node:fs';
import path from 'node:path';

/** Sets the process umask to 077, creates `dir` 0700 and removes group/other access under it; returns how many paths were changed. */
export function securedDataDir(dir: string): number {
  process.umask(0o077);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  let fixed = 0;
  const walk = (p: string): void => {
    const st = fs.lstatSync(p);
    if (st.isSymbolicLink()) return;
    if (st.mode & 0o077) {
      fs.chmodSync(p, st.mode & 0o700);
      fixed++;
    }
    if (st.isDirectory()) for (const name of fs.readdirSync(p)) walk(path.join(p, name));
  };
  walk(dir);
  return fixed;
}
