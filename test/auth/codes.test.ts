// auth/codes.ts on a real store: a 6-digit code stored only as a keyed hash bound to what it was
// issued for, mailed (or kept encrypted for the test environment), valid 10 minutes, 5 wrong tries,
// consumed once, compared in constant time; the resend cooldown and the limits per address, client
// and project; the same answer for a suppressed address; the project's own sender once verified.
import nodeCrypto from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Codes, type SystemMessage } from '../../auth/codes.js';
import { AuthCrypto } from '../../auth/crypto.js';
import type { ProviderConfig } from '../../auth/providers/types.js';
import { settings } from '../../auth/settings.js';
import type { Caller } from '../../control/api-keys/authenticate.js';
import { RateLimiter } from '../../control/limits/rate-limit.js';
import { clock } from '../../core/clock.js';
import { loadConfig } from '../../core/config.js';
import { ApiError } from '../../core/errors.js';
import { createLogger } from '../../core/log.js';
import { unitStore, type UnitStore } from '../helpers/unit-store.js';

const emailProvider: ProviderConfig = {
  id: 'email',
  enabled: true,
  methods: ['otp'],
  clientId: null,
  clientSecret: null,
  botToken: null,
  endpoints: {},
  region: {},
};
const IP = '203.0.113.7';

let u: UnitStore;
let sent: Array<{ caller: Caller; message: SystemMessage }>;
let refuse: ApiError | undefined;
let capped: string[];
const crypto = new AuthCrypto('s'.repeat(64));

function codes(projectCap = 1000): Codes {
  return new Codes({
    store: u.store.signIn,
    domains: u.store.domains,
    crypto,
    limiter: new RateLimiter(),
    sendSystemMail: async (caller, message) => {
      if (refuse) throw refuse;
      sent.push({ caller, message });
      return { id: `email-${sent.length}` };
    },
    config: (() => {
      const c = loadConfig({ POSTGATE_SYSTEM_FROM: 'no-reply@postgate.test' });
      return { ...c, auth: { ...c.auth, codeSendsPerProjectHour: projectCap } };
    })(),
    log: createLogger('test', 'silent'),
    onCapped: (slug) => capped.push(slug),
  });
}

/** The code in the last email. */
const lastCode = () => /code is (\d{6})/.exec(sent.at(-1)!.message.text)![1]!;
const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: ApiError) => e.code,
  );

beforeEach(async () => {
  u = await unitStore();
  sent = [];
  refuse = undefined;
  capped = [];
});

afterEach(async () => {
  clock.setOffset(0);
  vi.restoreAllMocks();
  await u.close();
});

describe('sending', () => {
  it('mails a 6-digit code from the system sender and stores only its keyed hash', async () => {
    const c = codes();
    await c.send(u.caller(), 'email', 'ada@example.com', IP, emailProvider, null);
    expect(sent).toHaveLength(1);
    const { message } = sent[0]!;
    expect(message).toMatchObject({ from: 'no-reply@postgate.test', to: 'ada@example.com', subject: 'Your Acme sign-in code' });
    const code = lastCode();
    expect(message.html).toContain(`<b>${code}</b>`);
    expect(message.text).toContain('expires in 10 minutes');
    // The test-environment copy is only for test keys.
    expect(await u.store.signIn.testOtp(u.project.id, 'email', 'ada@example.com')).toBeUndefined();
    // What the store holds is the HMAC bound to (project, environment, channel, address), not the code.
    let stored = '';
    const check = await u.store.signIn.checkOtp(u.project.id, 'live', 'email', 'ada@example.com', clock.now(), 5, (hash) => {
      stored = hash;
      return true;
    });
    expect(check).toBe('ok');
    expect(stored).toBe(crypto.codeHash(code, u.project.id, 'live', 'email', 'ada@example.com'));
    expect(stored).not.toContain(code);
  });

  it('a test key: nothing is mailed, the code is kept encrypted for the test read endpoint', async () => {
    const c = codes();
    const test = u.caller('test');
    await c.send(test, 'email', 'ada@example.com', IP, emailProvider, null);
    expect(sent).toHaveLength(0);
    const stored = await u.store.signIn.testOtp(u.project.id, 'email', 'ada@example.com');
    expect(stored!.testCode).toMatch(/^v1\./);
    const { code, expiresAt } = await c.testCode(test, 'email', 'ada@example.com');
    expect(code).toMatch(/^\d{6}$/);
    expect(stored!.testCode).not.toContain(code);
    expect(expiresAt - clock.now()).toBeLessThanOrEqual(settings.codeTtlMs);
    expect(await codeOf(c.verify(test, 'email', 'ada@example.com', code, IP))).toBe('ok');
    await expect(c.testCode(test, 'email', 'ada@example.com')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('a project name with markup is escaped in the HTML body', async () => {
    const p = await u.another('evil');
    const c = codes();
    await c.send(u.caller('live', 'all', { ...p, name: '<img src=x onerror=alert(1)>' }), 'email', 'a@example.com', IP, emailProvider, null);
    expect(sent[0]!.message.html).not.toContain('<img');
    expect(sent[0]!.message.html).toMatch(/&(lt|#60);img/);
  });

  it('a second code for the same address waits for the cooldown; another address does not', async () => {
    const c = codes();
    await c.send(u.caller(), 'email', 'ada@example.com', IP, emailProvider, null);
    const err = await c.send(u.caller(), 'email', 'ada@example.com', IP, emailProvider, null).catch((e: ApiError) => e);
    expect(err).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED' });
    expect(Number((err as ApiError).headers?.['Retry-After'])).toBeGreaterThan(0);
    await c.send(u.caller(), 'email', 'bob@example.com', IP, emailProvider, null);
    clock.setOffset(settings.codeResendCooldownMs + 1000);
    await c.send(u.caller(), 'email', 'ada@example.com', IP, emailProvider, null);
    expect(sent).toHaveLength(3);
  });

  it(`at most ${settings.codeSendsPerTargetHour} codes an hour to one address`, async () => {
    const c = codes();
    let n = 0;
    for (; n < 10; n++) {
      clock.setOffset(n * (settings.codeResendCooldownMs + 1000));
      if ((await codeOf(c.send(u.caller(), 'email', 'ada@example.com', IP, emailProvider, null))) !== 'ok') break;
    }
    expect(n).toBe(settings.codeSendsPerTargetHour);
  });

  it('the project’s hourly cap refuses, counts and logs a capped send', async () => {
    const c = codes(2);
    await c.send(u.caller(), 'email', 'a@example.com', IP, emailProvider, null);
    await c.send(u.caller(), 'email', 'b@example.com', '203.0.113.8', emailProvider, null);
    expect(await codeOf(c.send(u.caller(), 'email', 'c@example.com', '203.0.113.9', emailProvider, null))).toBe('RATE_LIMIT_EXCEEDED');
    expect(capped).toEqual(['acme']);
    expect(sent).toHaveLength(2);
  });

  it('a suppressed address gets the same answer as any other, and no email', async () => {
    refuse = new ApiError('RECIPIENT_IN_SUPPRESSION_LIST', 'suppressed');
    await expect(codes().send(u.caller(), 'email', 'gone@example.com', IP, emailProvider, null)).resolves.toBeUndefined();
    expect(sent).toHaveLength(0);
    // Any other refusal is the caller's to see.
    refuse = new ApiError('DOMAIN_NOT_VERIFIED', 'no');
    await expect(codes().send(u.caller(), 'email', 'b@example.com', IP, emailProvider, null)).rejects.toMatchObject({ code: 'DOMAIN_NOT_VERIFIED' });
  });

  it('the project’s own code sender only once its domain is verified', async () => {
    const c = codes();
    const domain = { projectId: u.project.id, name: 'acme.test', selector: 's', dkimPrivate: 'k', dkimPublic: 'p', records: [], createdAt: 1 };
    await u.store.domains.create({ ...domain, id: 'dom_1', status: 'pending' });
    await c.send(u.caller(), 'email', 'a@example.com', IP, emailProvider, 'Acme <login@acme.test>');
    expect(sent[0]!.message.from).toBe('no-reply@postgate.test');
    await u.store.domains.update('dom_1', 'verified', [], clock.now(), clock.now());
    await c.send(u.caller(), 'email', 'b@example.com', IP, emailProvider, 'Acme <login@acme.test>');
    expect(sent[1]!.message.from).toBe('Acme <login@acme.test>');
    await c.send(u.caller(), 'email', 'c@example.com', IP, emailProvider, 'not an address');
    expect(sent[2]!.message.from).toBe('no-reply@postgate.test');
  });
});

describe('verifying', () => {
  it('the right code signs in once; a second use finds no code', async () => {
    const c = codes();
    await c.send(u.caller(), 'email', 'ada@example.com', IP, emailProvider, null);
    const code = lastCode();
    expect(await codeOf(c.verify(u.caller(), 'email', 'ada@example.com', code, IP))).toBe('ok');
    expect(await codeOf(c.verify(u.caller(), 'email', 'ada@example.com', code, IP))).toBe('INVALID_CODE');
  });

  it(`${settings.codeMaxAttempts} wrong codes lock it: the right one is refused after that`, async () => {
    const c = codes();
    await c.send(u.caller(), 'email', 'ada@example.com', IP, emailProvider, null);
    const code = lastCode();
    const answers = [];
    for (let i = 0; i < settings.codeMaxAttempts; i++) answers.push(await codeOf(c.verify(u.caller(), 'email', 'ada@example.com', wrong(code), IP)));
    expect(answers).toEqual([...Array(settings.codeMaxAttempts - 1).fill('INVALID_CODE'), 'TOO_MANY_ATTEMPTS']);
    expect(await codeOf(c.verify(u.caller(), 'email', 'ada@example.com', code, IP))).toBe('TOO_MANY_ATTEMPTS');
  });

  it('a new code resets the tries', async () => {
    const c = codes();
    await c.send(u.caller(), 'email', 'ada@example.com', IP, emailProvider, null);
    for (let i = 0; i < settings.codeMaxAttempts - 1; i++) await codeOf(c.verify(u.caller(), 'email', 'ada@example.com', wrong(lastCode()), IP));
    clock.setOffset(settings.codeResendCooldownMs + 1000);
    await c.send(u.caller(), 'email', 'ada@example.com', IP, emailProvider, null);
    expect(await codeOf(c.verify(u.caller(), 'email', 'ada@example.com', wrong(lastCode()), IP))).toBe('INVALID_CODE');
    expect(await codeOf(c.verify(u.caller(), 'email', 'ada@example.com', lastCode(), IP))).toBe('ok');
  });

  it('expires after 10 minutes', async () => {
    const c = codes();
    await c.send(u.caller(), 'email', 'ada@example.com', IP, emailProvider, null);
    clock.setOffset(settings.codeTtlMs + 1);
    expect(await codeOf(c.verify(u.caller(), 'email', 'ada@example.com', lastCode(), IP))).toBe('CODE_EXPIRED');
  });

  it('is bound to its project, environment, channel and address', async () => {
    const c = codes();
    await c.send(u.caller(), 'email', 'ada@example.com', IP, emailProvider, null);
    const code = lastCode();
    const other = await u.another('other');
    expect(await codeOf(c.verify(u.caller('live', 'all', other), 'email', 'ada@example.com', code, IP))).toBe('INVALID_CODE');
    expect(await codeOf(c.verify(u.caller('test'), 'email', 'ada@example.com', code, IP))).toBe('INVALID_CODE');
    expect(await codeOf(c.verify(u.caller(), 'sms', 'ada@example.com', code, IP))).toBe('INVALID_CODE');
    expect(await codeOf(c.verify(u.caller(), 'email', 'bob@example.com', code, IP))).toBe('INVALID_CODE');
    // None of those tries touched the real code.
    expect(await codeOf(c.verify(u.caller(), 'email', 'ada@example.com', code, IP))).toBe('ok');
  });

  it('only six digits can match: anything else is a wrong try', async () => {
    const c = codes();
    await c.send(u.caller(), 'email', 'ada@example.com', IP, emailProvider, null);
    const code = lastCode();
    for (const bad of [` ${code}`, `${code}0`, code.slice(1), 'abcdef'])
      expect(await codeOf(c.verify(u.caller(), 'email', 'ada@example.com', bad, IP)), bad).toBe('INVALID_CODE');
    // The fifth try, with the code itself.
    expect(await codeOf(c.verify(u.caller(), 'email', 'ada@example.com', code, IP))).toBe('ok');
  });

  it('compares the stored hash in constant time', async () => {
    const c = codes();
    await c.send(u.caller(), 'email', 'ada@example.com', IP, emailProvider, null);
    const spy = vi.spyOn(nodeCrypto, 'timingSafeEqual');
    await codeOf(c.verify(u.caller(), 'email', 'ada@example.com', wrong(lastCode()), IP));
    expect(spy).toHaveBeenCalledTimes(1);
  });

  it(`at most ${settings.codeVerifiesPerIp10Min} checks from one client in 10 minutes, whatever the address`, async () => {
    const c = codes();
    const answers = new Set<string>();
    for (let i = 0; i < settings.codeVerifiesPerIp10Min; i++) answers.add(await codeOf(c.verify(u.caller(), 'email', `a${i}@example.com`, '123456', IP)));
    expect(answers).toEqual(new Set(['INVALID_CODE']));
    expect(await codeOf(c.verify(u.caller(), 'email', 'z@example.com', '123456', IP))).toBe('RATE_LIMIT_EXCEEDED');
    expect(await codeOf(c.verify(u.caller(), 'email', 'z@example.com', '123456', '203.0.113.99'))).toBe('INVALID_CODE');
  });
});
