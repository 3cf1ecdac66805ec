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
    const auth = {
      codeSendsPerProjectHour: 1000,
      auditRetentionDays: 90,
      keylessPerIpMinute: 60,
      keylessPerProjectMinute: 1200,
      pendingSignInsPerProject: 10_000,
    };
    expect(loadConfig({}).auth).toEqual(auth);
    expect(withConfig({ auth: { auditRetentionDays: 7 } })().auth).toEqual({ ...auth, auditRetentionDays: 7 });
  });

  it.each([0, -1, 1.5, '30', null, 3651])('refuses %j with one line naming the setting', (value) => {
    expect(withConfig({ auth: { auditRetentionDays: value } })).toThrow(/^POSTGATE_CONFIG: auth\.auditRetentionDays must be /);
  });
});

describe('the limits of the keyless auth routes', () => {
  it('are taken from the file', () => {
    expect(withConfig({ auth: { keylessPerIpMinute: 5, keylessPerProjectMinute: 50, pendingSignInsPerProject: 3 } })().auth).toMatchObject({
      keylessPerIpMinute: 5,
      keylessPerProjectMinute: 50,
      pendingSignInsPerProject: 3,
    });
  });

  it.each(['keylessPerIpMinute', 'keylessPerProjectMinute', 'pendingSignInsPerProject'])('refuses 0 and fractions for %s', (key) => {
    for (const value of [0, 2.5]) expect(withConfig({ auth: { [key]: value } })).toThrow(new RegExp(`^POSTGATE_CONFIG: auth\\.${key} must be a whole number`));
  });
});

describe('settings of the config file', () => {
  it("takes values of their default's kind", () => {
    const c = withConfig({
      limits: { maxRecipients: 10 },
      delivery: { retryDelays: [30, 60], connectionIdleSeconds: 0 },
      storage: { synchronous: 'NORMAL' },
      defaultPlan: 'pro',
      smtpRate: 50,
    })();
    expect(c.limits.maxRecipients).toBe(10);
    expect(c.delivery.retryDelays).toEqual([30, 60]);
    expect(c.delivery.connectionIdleSeconds).toBe(0);
    expect(c.storage.synchronous).toBe('NORMAL');
    expect(c.defaultPlan).toBe('pro');
    expect(c.smtpRate).toBe(50);
  });

  it.each([
    [{ limits: { maxRecipients: 'fifty' } }, /^POSTGATE_CONFIG: limits\.maxRecipients must be a number, 0 or more, got "fifty"$/],
    [{ delivery: { connectTimeout: -1 } }, /^POSTGATE_CONFIG: delivery\.connectTimeout must be a number, 0 or more, got -1$/],
    [{ delivery: { retryDelays: 60 } }, /^POSTGATE_CONFIG: delivery\.retryDelays must be a list, got 60$/],
    [{ delivery: { retryDelays: [60, '5m'] } }, /^POSTGATE_CONFIG: delivery\.retryDelays must be a list of numbers, each 0 or more/],
    [{ http: { requestTimeoutMs: null } }, /^POSTGATE_CONFIG: http\.requestTimeoutMs must be a number, 0 or more, got null$/],
    [{ pacing: { volumeSpike: 4 } }, /^POSTGATE_CONFIG: pacing\.volumeSpike must be an object, got 4$/],
    [{ storage: { synchronous: 'OFF' } }, /^POSTGATE_CONFIG: storage\.synchronous must be FULL or NORMAL, got "OFF"$/],
    [{ storage: { synchronous: 1 } }, /^POSTGATE_CONFIG: storage\.synchronous must be a string, got 1$/],
    [{ defaultPlan: 'gold' }, /^POSTGATE_CONFIG: defaultPlan must be free, pro or scale, got "gold"$/],
    [{ smtpRate: 0 }, /^POSTGATE_CONFIG: smtpRate must be a whole number of at least 1, got 0$/],
    [{ smtpConnectionsPerIp: '100' }, /^POSTGATE_CONFIG: smtpConnectionsPerIp must be a whole number of at least 1, got "100"$/],
    [{ limits: [] }, /^POSTGATE_CONFIG: limits must be an object$/],
  ])('refuses %j with one line naming the setting', (json, message) => {
    expect(withConfig(json)).toThrow(message);
  });

  it('refuses a file that is not a JSON object, naming it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-config-'));
    const file = path.join(dir, 'config.json');
    fs.writeFileSync(file, '{"limits": ');
    expect(() => loadConfig({ POSTGATE_CONFIG: file, POSTGATE_DATA_DIR: dir })).toThrow(/^POSTGATE_CONFIG: cannot read .*config\.json as JSON: /);
    fs.writeFileSync(file, '[1]');
    expect(() => loadConfig({ POSTGATE_CONFIG: file, POSTGATE_DATA_DIR: dir })).toThrow(/^POSTGATE_CONFIG: .*config\.json must hold a JSON object$/);
    expect(() => loadConfig({ POSTGATE_CONFIG: path.join(dir, 'missing.json'), POSTGATE_DATA_DIR: dir })).toThrow(
      /^POSTGATE_CONFIG: cannot read .*missing\.json/,
    );
  });
});
