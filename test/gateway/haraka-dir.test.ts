// gateway/haraka-dir.ts: Haraka's install dir written from POSTGATE_* settings at each start: our
// plugins in hook order, a retry schedule whose length decides when Haraka gives up, the inbound
// listener, the log level, and links to our plugins replaced atomically.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config.js';
import { PLUGINS, tempFailIntervals, writeHarakaDir } from '../../gateway/haraka-dir.js';
import { gatewayPaths } from '../../gateway/paths.js';

describe('tempFailIntervals', () => {
  it('one entry fewer than the temporary failures allowed (the last one bounces), the last delay repeating', () => {
    expect(tempFailIntervals([60, 300, 900], 5)).toBe('60s,300s,900s,900s');
    expect(tempFailIntervals([60], 3)).toBe('60s,60s');
  });

  it('never under Haraka’s 5 s, whole seconds, none when the first failure bounces', () => {
    expect(tempFailIntervals([1, 2.5, 7.2], 4)).toBe('5s,5s,8s');
    expect(tempFailIntervals([60], 1)).toBe('none');
    expect(tempFailIntervals([], 3)).toBe('60s,60s');
  });
});

describe('writeHarakaDir', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-haraka-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const read = (root: string, name: string) => fs.readFileSync(path.join(root, 'config', name), 'utf8');

  it('writes every file Haraka reads from our settings, and links our plugins', () => {
    const config = loadConfig({
      POSTGATE_DATA_DIR: dir,
      POSTGATE_MX_HOST: 'mx.postgate.test',
      POSTGATE_LOG_LEVEL: 'warn',
      POSTGATE_SYSTEM_FROM: 'n@postgate.test',
    });
    const paths = gatewayPaths(config);
    const plugins = fs.mkdtempSync(path.join(dir, 'plugins-src-'));
    const root = writeHarakaDir(config, paths, plugins, '127.0.0.1:2525');
    expect(root).toBe(paths.harakaDir);
    expect(read(root, 'plugins').trim().split('\n')).toEqual(PLUGINS);
    expect(PLUGINS[0]).toBe('postgate_rpc');
    expect(PLUGINS.indexOf('postgate_pacing')).toBeLessThan(PLUGINS.indexOf('postgate_events'));
    const smtp = read(root, 'smtp.ini');
    expect(smtp).toContain('listen=127.0.0.1:2525');
    expect(smtp).toContain('nodes=0');
    expect(smtp).toContain(`spool_dir=${paths.spoolDir}`);
    expect(read(root, 'outbound.ini')).toContain(`temp_fail_intervals=${tempFailIntervals(config.delivery.retryDelays, config.delivery.maxTempFailures)}`);
    expect(read(root, 'me').trim()).toBe('mx.postgate.test');
    expect(read(root, 'queue_dir').trim()).toBe(paths.queueDir);
    expect(read(root, 'log.ini')).toContain('level=warn');
    expect(fs.readlinkSync(path.join(root, 'plugins'))).toBe(plugins);
    for (const d of [paths.queueDir, paths.spoolDir]) expect(fs.statSync(d).isDirectory()).toBe(true);
  });

  it('a second start rewrites the files and points the link at a moved checkout', () => {
    const config = loadConfig({ POSTGATE_DATA_DIR: dir, POSTGATE_LOG_LEVEL: 'info' });
    const paths = gatewayPaths(config);
    const first = fs.mkdtempSync(path.join(dir, 'a-'));
    const second = fs.mkdtempSync(path.join(dir, 'b-'));
    writeHarakaDir(config, paths, first, '127.0.0.1:2525');
    fs.appendFileSync(path.join(paths.harakaDir, 'config', 'outbound.ini'), 'enable_tls=false\n');
    writeHarakaDir(config, paths, second, '127.0.0.1:2526');
    expect(fs.readlinkSync(path.join(paths.harakaDir, 'plugins'))).toBe(second);
    expect(read(paths.harakaDir, 'outbound.ini')).not.toContain('enable_tls=false');
    expect(read(paths.harakaDir, 'smtp.ini')).toContain('listen=127.0.0.1:2526');
    // pino's info is Haraka's notice (Haraka's info is per-message chatter).
    expect(read(paths.harakaDir, 'log.ini')).toContain('level=notice');
  });
});
