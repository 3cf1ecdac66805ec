// The service's own secrets: from the environment, or generated once into the data
// dir. Apart from the config loader so that loading config needs no crypto (the
// supervisor, which only reads config, stays small).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from './config.js';

/** A secret kept in the data dir (mode 0600) when the environment gives none. */
function dataDirSecret(config: Config, file: string, fromEnv: string | undefined): string {
  if (fromEnv) return fromEnv;
  const p = path.join(config.dataDir, file);
  try {
    return fs.readFileSync(p, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(config.dataDir, { recursive: true });
  const value = crypto.randomBytes(32).toString('base64url');
  // Written whole under another name, then linked into place: control and its gateway read the
  // secret as they start, and one must never read the other's file created but not yet written.
  const tmp = `${p}.${process.pid}.${crypto.randomBytes(4).toString('hex')}`;
  fs.writeFileSync(tmp, `${value}\n`, { mode: 0o600, flag: 'wx' });
  try {
    fs.linkSync(tmp, p);
    return value;
  } catch (err) {
    // Another process created it first: use theirs.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return fs.readFileSync(p, 'utf8').trim();
    throw err;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

export function adminToken(config: Config): string {
  return dataDirSecret(config, 'admin-token', config.adminToken);
}

export function masterSecret(config: Config): string {
  return dataDirSecret(config, 'secret', config.secret);
}
