// The audit retention setting (auth.auditRetentionDays in POSTGATE_CONFIG): a default, and one
// clear error for a value that is not a whole number of days in range.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config.js';

function withConfig(json: unknown) {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pg-config-')), 'config.json');
  fs.writeFileSync(file, JSON.stringify(json));
  return () => loadConfig({ POSTGATE_CONFIG: file, POSTGATE_DATA_DIR: path.dirname(file) });
}

describe('auth.auditRetentionDays', () => {
  it('is 90 days unless set, and keeps the other auth settings', () => {
    expect(loadConfig({}).auth).toEqual({ codeSendsPerProjectHour: 1000, auditRetentionDays: 90 });
    expect(withConfig({ auth: { auditRetentionDays: 7 } })().auth).toEqual({ codeSendsPerProjectHour: 1000, auditRetentionDays: 7 });
  });

  it.each([0, -1, 1.5, '30', null, 3651])('refuses %j with one line naming the setting', (value) => {
    expect(withConfig({ auth: { auditRetentionDays: value } })).toThrow(
      /^POSTGATE_CONFIG: auth\.auditRetentionDays must be a whole number of days from 1 to 3650/,
    );
  });
});
