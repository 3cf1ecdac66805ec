// core/log-line.ts: the supervisor's log lines in pino's shape, without loading pino.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLineLogger } from '../../core/log-line.js';
import { captured } from '../helpers/stdout.js';

afterEach(() => vi.restoreAllMocks());

describe('createLineLogger', () => {
  it('writes pino’s shape, at or above its level only', () => {
    const lines = captured(() => {
      const log = createLineLogger('supervisor', 'info');
      log.debug('hidden');
      log.info({ child: 'gateway', code: 1 }, 'restarting');
      log.error('plain message');
    });
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ level: 30, proc: 'supervisor', name: 'supervisor', pid: process.pid, child: 'gateway', code: 1, msg: 'restarting' });
    expect(typeof lines[0]!.time).toBe('number');
    expect(lines[1]).toMatchObject({ level: 50, msg: 'plain message' });
  });

  it('an unknown level is info', () => {
    expect(captured(() => createLineLogger('s', 'chatty').debug('x'))).toEqual([]);
  });
});
