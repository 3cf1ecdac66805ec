// core/log.ts: JSON log lines, secrets redacted wherever they can appear.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger, redactPaths } from '../../core/log.js';
import { captured } from '../helpers/stdout.js';

afterEach(() => vi.restoreAllMocks());

describe('createLogger', () => {
  it('redacts keys, tokens, passwords and secrets, and the credential headers of a request', () => {
    const [line] = captured(() => {
      const log = createLogger('test', 'info');
      log.info(
        {
          req: { headers: { authorization: 'Bearer pgs_abc', 'x-service-key': 'pg_live_xyz', accept: 'json' } },
          provider: { token: 't0k3n', secret: 's3cr3t', password: 'hunter2', key: 'k3y', apiKey: 'pg_live_xyz', name: 'kept' },
        },
        'hello',
      );
      log.flush?.();
    });
    const text = JSON.stringify(line);
    for (const secret of ['pgs_abc', 'pg_live_xyz', 't0k3n', 's3cr3t', 'hunter2', 'k3y']) expect(text).not.toContain(secret);
    expect(line).toMatchObject({ msg: 'hello', proc: 'test', provider: { name: 'kept', token: '[redacted]' }, req: { headers: { accept: 'json' } } });
    expect(redactPaths.length).toBeGreaterThan(5);
  });
});
