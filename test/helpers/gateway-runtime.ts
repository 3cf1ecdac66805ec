// The gateway's runtime and its event hooks in this process, for hook unit tests: the outbox in a temp
// dir, config read from the environment as in a gateway process; removed after the file's tests.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { HarakaOutbound } from '../../gateway/haraka.js';
import type { EventHooks } from '../../gateway/hooks/events.js';
import type { GatewayRuntime } from '../../gateway/runtime.js';

export interface GatewayUnderTest {
  rt: GatewayRuntime;
  hooks: EventHooks;
}

/** Registers the file's beforeAll/afterAll; the fields are set once beforeAll has run. */
export function useGatewayRuntime(prefix: string): GatewayUnderTest {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const g = {} as GatewayUnderTest;
  beforeAll(async () => {
    process.env.POSTGATE_DATA_DIR = dir;
    process.env.POSTGATE_LOG_LEVEL = 'silent';
    fs.mkdirSync(path.join(dir, 'gateway'), { recursive: true });
    g.rt = await (await import('../../gateway/runtime.js')).gatewayRuntime();
    g.hooks = await (await import('../../gateway/hooks/events.js')).eventHooks({} as HarakaOutbound);
  });
  afterAll(() => {
    g.rt?.outbox.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return g;
}
