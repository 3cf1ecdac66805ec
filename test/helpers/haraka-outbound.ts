// Haraka's outbound, for a process of its own that queues files without delivering them: outbound
// reads its config once per process from $HARAKA, so the dir is made before it loads.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/** Loads Haraka's outbound over `dir` (config/, queue/), delivery disabled: the queue files stay. */
export function disabledOutbound(dir: string) {
  process.env.HARAKA = dir;
  fs.mkdirSync(path.join(dir, 'config'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'queue'), { recursive: true });
  // As gateway/haraka-dir.ts writes it; disabled: nothing is delivered.
  fs.writeFileSync(path.join(dir, 'config/outbound.ini'), 'received_header=postgate\ndisabled=true\n');
  return createRequire(import.meta.url)('Haraka/outbound');
}
