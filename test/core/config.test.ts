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
      signingKeyRotationDays: 0,
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

describe('shaping', () => {
  const good = { name: 'mine', providers: ['google'], match: { enhancedCodes: ['4.7.28'] }, action: { kind: 'rate', factor: 0.5 }, durationSeconds: 60 };

  it('has no operator rules and keeps the defaults unless set; takes rules for the providers of pacing.providers', () => {
    expect(withConfig({})().shaping).toEqual({ rules: [], replaceDefaults: false });
    const c = withConfig({
      pacing: { providers: { acme: { dailyNorm: 0, growth: 1, maxDailyNorm: 0, ratePerMinute: 10, connections: 1 } } },
      shaping: { rules: [good, { ...good, name: 'acme', providers: ['acme'], action: { kind: 'suspend', scope: 'project' } }], replaceDefaults: true },
    })();
    expect(c.shaping.replaceDefaults).toBe(true);
    expect(c.shaping.rules.map((r) => r.name)).toEqual(['mine', 'acme']);
  });

  it('refuses every mistake of the rules at start, one line each', () => {
    const bad = [
      { ...good, name: 'regexp', match: { pattern: '([' } },
      { ...good, name: 'provider', providers: ['gmail'] },
      { ...good, name: 'action', action: { kind: 'slow' } },
      { ...good, name: 'nomatch', match: {} },
      { ...good, name: 'zero', durationSeconds: 0 },
      { ...good, name: 'factor', action: { kind: 'connections', factor: 1.5 } },
      { ...good, name: 'both', action: { kind: 'rate', value: 5, factor: 0.5 } },
      { ...good, name: 'scope', action: { kind: 'suspend', scope: 'world' } },
      { ...good, name: 'mine' },
    ];
    let message = '';
    try {
      withConfig({ shaping: { rules: [good, ...bad] } })();
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message.split('\n')).toEqual([
      expect.stringMatching(/^POSTGATE_CONFIG: shaping\.rules\[1\] \(regexp\)\.match\.pattern: bad regular expression: /),
      expect.stringMatching(/^POSTGATE_CONFIG: shaping\.rules\[2\] \(provider\)\.providers: unknown provider "gmail" \(known: google, microsoft, /),
      'POSTGATE_CONFIG: shaping.rules[3] (action).action.kind: unknown action "slow" (suspend, rate or connections)',
      'POSTGATE_CONFIG: shaping.rules[4] (nomatch).match: no match field: give enhancedCodes, codes or pattern',
      'POSTGATE_CONFIG: shaping.rules[5] (zero).durationSeconds must be a number of seconds above 0, got 0',
      'POSTGATE_CONFIG: shaping.rules[6] (factor).action.factor must be between 0 and 1 (both excluded), got 1.5',
      'POSTGATE_CONFIG: shaping.rules[7] (both).action: give either value or factor',
      'POSTGATE_CONFIG: shaping.rules[8] (scope).action.scope must be provider or project, got "world"',
      'POSTGATE_CONFIG: shaping.rules: the name mine is given twice',
    ]);
    expect(withConfig({ shaping: { rules: {} } })).toThrow(/^POSTGATE_CONFIG: shaping\.rules must be a list, got \{\}$/);
    expect(withConfig({ shaping: { replace: true } })).toThrow(/^POSTGATE_CONFIG: unknown setting shaping\.replace$/);
    expect(withConfig({ shaping: { rules: [{ ...good, match: { enhancedCodes: ['x'] }, extra: 1 }] } })).toThrow(
      /^POSTGATE_CONFIG: shaping\.rules\[0\] \(mine\): unknown field extra\nPOSTGATE_CONFIG: shaping\.rules\[0\] \(mine\)\.match\.enhancedCodes must be a list of enhanced codes/,
    );
  });
});

describe('alerts', () => {
  const env = (over: Record<string, string>, json: unknown = {}) => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pg-config-')), 'config.json');
    fs.writeFileSync(file, JSON.stringify(json));
    return () => loadConfig({ POSTGATE_CONFIG: file, POSTGATE_DATA_DIR: path.dirname(file), ...over });
  };

  it('has the defaults; the environment sets the warning rates and the queue age over the file', () => {
    expect(withConfig({})().alerts).toEqual({
      bounceRate: 0.05,
      bounceRateCritical: 0.1,
      complaintRate: 0.001,
      complaintRateCritical: 0.003,
      queueAgeMinutes: 60,
      minOutcomes: 50,
    });
    const c = env(
      { POSTGATE_ALERT_BOUNCE_RATE: '0.02', POSTGATE_ALERT_COMPLAINT_RATE: '0.01', POSTGATE_ALERT_QUEUE_AGE_MINUTES: '30' },
      { alerts: { minOutcomes: 5 } },
    )();
    // A warning raised above its default critical rate makes the critical rate twice it (at most 1).
    expect(c.alerts).toEqual({
      bounceRate: 0.02,
      bounceRateCritical: 0.1,
      complaintRate: 0.01,
      complaintRateCritical: 0.02,
      queueAgeMinutes: 30,
      minOutcomes: 5,
    });
    expect(env({ POSTGATE_ALERT_BOUNCE_RATE: '0.6' })().alerts.bounceRateCritical).toBe(1);
  });

  it('refuses bad values at start', () => {
    expect(env({ POSTGATE_ALERT_BOUNCE_RATE: '5' })).toThrow(/POSTGATE_ALERT_BOUNCE_RATE must be a share above 0 and at most 1/);
    expect(env({ POSTGATE_ALERT_COMPLAINT_RATE: 'x' })).toThrow(/POSTGATE_ALERT_COMPLAINT_RATE/);
    expect(env({ POSTGATE_ALERT_QUEUE_AGE_MINUTES: '0' })).toThrow(/POSTGATE_ALERT_QUEUE_AGE_MINUTES must be a whole number/);
    expect(withConfig({ alerts: { bounceRate: 0.2, bounceRateCritical: 0.1 } })).toThrow(/alerts.bounceRateCritical \(0.1\) must not be below/);
    expect(withConfig({ alerts: { minOutcomes: 0 } })).toThrow(/alerts.minOutcomes/);
    expect(withConfig({ alerts: { loud: true } })).toThrow(/unknown setting alerts.loud/);
  });
});

describe('tls (enforced TLS and MTA-STS)', () => {
  const pem = '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n';
  it('requires nothing by default and follows MTA-STS on port 443', () => {
    expect(loadConfig({}).tls).toEqual({
      caFile: undefined,
      extraCa: [],
      requireProviders: [],
      mtaSts: { enabled: true, allowCidrs: [], port: 443, timeoutMs: 10_000, maxAgeSeconds: 31_557_600 },
    });
  });
  it('takes the file, with the environment over it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-config-'));
    const ca = path.join(dir, 'ca.pem');
    fs.writeFileSync(ca, pem + pem);
    const file = path.join(dir, 'config.json');
    fs.writeFileSync(file, JSON.stringify({ tls: { requireProviders: ['google'], mtaSts: { allowCidrs: ['127.0.0.0/8'], port: 8443 } } }));
    const env = { POSTGATE_CONFIG: file, POSTGATE_DATA_DIR: dir };
    expect(loadConfig(env).tls).toMatchObject({ requireProviders: ['google'], mtaSts: { enabled: true, allowCidrs: ['127.0.0.0/8'], port: 8443 } });
    const over = loadConfig({ ...env, POSTGATE_TLS_CA_FILE: ca, POSTGATE_TLS_REQUIRE_PROVIDERS: 'google, microsoft', POSTGATE_TLS_MTA_STS: 'false' }).tls;
    expect(over).toMatchObject({ caFile: ca, requireProviders: ['google', 'microsoft'], mtaSts: { enabled: false } });
    expect(over.extraCa).toHaveLength(2);
  });
  it('refuses mistakes at start, one line each', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-config-'));
    const empty = path.join(dir, 'empty.pem');
    fs.writeFileSync(empty, 'not a certificate');
    expect(() => loadConfig({ POSTGATE_TLS_CA_FILE: path.join(dir, 'missing.pem') })).toThrow(/^POSTGATE_TLS_CA_FILE: cannot read /);
    expect(() => loadConfig({ POSTGATE_TLS_CA_FILE: empty })).toThrow(/^POSTGATE_TLS_CA_FILE: .* holds no PEM certificate$/);
    expect(() => loadConfig({ POSTGATE_TLS_REQUIRE_PROVIDERS: 'gogle' })).toThrow(/must name known providers \(google, microsoft/);
    expect(() => loadConfig({ POSTGATE_TLS_MTA_STS: 'maybe' })).toThrow('POSTGATE_TLS_MTA_STS must be true or false, got "maybe"');
    expect(withConfig({ tls: { mtaSts: { allowCidrs: ['localhost'] } } })).toThrow('POSTGATE_CONFIG: tls.mtaSts.allowCidrs: not a CIDR: localhost');
    expect(withConfig({ tls: { mtaSts: { port: 70000 } } })).toThrow(/tls\.mtaSts\.port must be a port number/);
    expect(withConfig({ tls: { mtaSts: { timeoutMs: 5 } } })).toThrow(/tls\.mtaSts\.timeoutMs must be/);
    expect(withConfig({ tls: { mtaSts: { maxAgeSeconds: 31557601 } } })).toThrow(/tls\.mtaSts\.maxAgeSeconds must be/);
    expect(withConfig({ tls: { requireTls: true } })).toThrow('POSTGATE_CONFIG: unknown setting tls.requireTls');
  });
});

describe('tracking settings', () => {
  const file = (o: unknown) => {
    const f = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pg-cfg-')), 'c.json');
    fs.writeFileSync(f, JSON.stringify(o));
    return f;
  };
  it('default to the base URL: its host is the CNAMEs target, its scheme the links', () => {
    expect(loadConfig({ POSTGATE_BASE_URL: 'https://mail.example.com' }).tracking).toEqual({ host: 'mail.example.com', https: true });
    expect(loadConfig({}).tracking).toEqual({ host: 'localhost', https: false });
  });
  it('take the environment over the file', () => {
    expect(loadConfig({ POSTGATE_TRACKING_HOST: 'Track.Example.NET.', POSTGATE_TRACKING_HTTPS: 'true' }).tracking).toEqual({
      host: 'track.example.net',
      https: true,
    });
    expect(loadConfig({ POSTGATE_CONFIG: file({ tracking: { host: 't.example.org', https: false } }) }).tracking).toEqual({
      host: 't.example.org',
      https: false,
    });
    expect(loadConfig({ POSTGATE_CONFIG: file({ tracking: { host: 't.example.org' } }), POSTGATE_TRACKING_HOST: 'u.example.org' }).tracking.host).toBe(
      'u.example.org',
    );
  });
  it('refuse a host that is not one, a scheme flag that is not a boolean and unknown keys, in one line', () => {
    expect(() => loadConfig({ POSTGATE_TRACKING_HOST: 'http://x.example/' })).toThrow(/^POSTGATE_TRACKING_HOST must be a host name/);
    expect(() => loadConfig({ POSTGATE_TRACKING_HOST: 'a b' })).toThrow(/POSTGATE_TRACKING_HOST/);
    expect(() => loadConfig({ POSTGATE_TRACKING_HTTPS: 'maybe' })).toThrow(/^POSTGATE_TRACKING_HTTPS must be true or false/);
    expect(() => loadConfig({ POSTGATE_CONFIG: file({ tracking: { hots: 'x' } }) })).toThrow(/tracking\.hots is not a setting/);
    expect(() => loadConfig({ POSTGATE_CONFIG: file({ tracking: 'x' }) })).toThrow(/tracking must be an object/);
  });
});
