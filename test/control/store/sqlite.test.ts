// The store conformance suite on the SQLite backend, in a temporary data dir.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Store } from '../../../control/store/index.js';
import { openStore } from '../../../control/store/open.js';
import { localInvalidator } from '../../../core/invalidation.js';
import { describeStore } from './conformance.js';

describeStore('sqlite', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-store-'));
  const config = { dataDir: dir, storage: { synchronous: 'FULL' as const, maxBatch: 1000 } };
  let store: Store = await openStore(config, localInvalidator());
  return {
    store,
    reopen: async () => {
      await store.close();
      store = await openStore(config, localInvalidator());
      return store;
    },
    cleanup: async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});
