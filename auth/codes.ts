// Email and SMS sign-in codes: 6 digits from the CSPRNG, valid 10 minutes,
// stored as an HMAC bound to (project, environment, channel, address), at most
// 5 wrong tries per code, consumed atomically, a resend cooldown, limits per
// address and per client IP. Sending never looks the address up, so the
// answer (and its timing) is the same whether or not an account exists.
// Test-environment codes are never sent: they are kept encrypted for the
// test-only read endpoint.
import { ApiError, notFound } from '../core/errors.js';
import { clock } from '../core/clock.js';
import type { Config } from '../core/config.js';
import type { Logger } from '../core/log.js';
import type { Caller } from '../control/api-keys/authenticate.js';
import type { Domains, SignInStore } from '../control/store/index.js';
import { domainOf, parseMailbox } from '../common/address.js';
import { randomDigits, sameHex, type AuthCrypto } from './crypto.js';
import { durations, settings } from './settings.js';
import { envOf } from './sessions.js';
import { HttpSmsSender, LogSmsSender } from './sms.js';
import type { ProviderConfig } from './providers/types.js';
import type { Limiter } from './limiter.js';
import { escapeHtml } from '../core/html.js';

export type Channel = 'email' | 'sms';

/** A sign-in code email, from the project's code sender or the system sender. */
export interface SystemMessage {
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
}

/**
 * Queues a system email for the caller's project (outside its quota and bulk rules) and
 * answers its id, or throws the ApiError of a refusal (RECIPIENT_IN_SUPPRESSION_LIST, …).
 */
export type SendSystemMail = (caller: Caller, message: SystemMessage) => Promise<{ id: string }>;

export interface CodeDeps {
  store: SignInStore;
  /** The project's sender domains (a project's own code sender is used only once its domain is verified). */
  domains: Pick<Domains, 'byName'>;
  crypto: AuthCrypto;
  limiter: Limiter;
  sendSystemMail: SendSystemMail;
  config: Config;
  log: Logger;
  /** Counts capped sends (postgate_auth_code_sends_capped_total), for the operator's alert. */
  onCapped?: (projectSlug: string) => void;
}

export class Codes {
  constructor(private readonly d: CodeDeps) {}

  private hash(caller: Caller, channel: Channel, target: string, code: string): string {
    return this.d.crypto.codeHash(code, caller.project.id, envOf(caller), channel, target);
  }

  /** Counts one event (a send or a check) against a limit of the auth API; past it, "Too many <what>". */
  private take(key: string, limit: number, windowMs: number, what: string): void {
    this.d.limiter.take(`auth:${key}`, limit, windowMs, (s) => `Too many ${what}; try again in ${s} s`);
  }

  /**
   * The limits of a sign-in message to `target` (a code, or a magic link: one budget for both), in order: per
   * client address, the resend cooldown since `issuedAt`, the project's hourly cap, per target per hour and day.
   * `noun` words the refusals ('code', 'sign-in link').
   */
  countSend(caller: Caller, channel: Channel, target: string, ip: string, issuedAt: number | undefined, noun: string): void {
    const env = envOf(caller);
    this.take(`send-ip:${caller.project.id}:${env}:${ip}`, settings.codeSendsPerIpHour, durations.HOUR, `${noun} requests from this address`);
    const now = clock.now();
    if (issuedAt !== undefined && now - issuedAt < settings.codeResendCooldownMs) {
      const wait = Math.ceil((issuedAt + settings.codeResendCooldownMs - now) / 1000);
      throw new ApiError('RATE_LIMIT_EXCEEDED', `A ${noun} was just sent; ask again in ${wait} s`, {}, { 'Retry-After': String(wait) });
    }
    try {
      this.take(`send-project:${caller.project.id}:${env}`, this.d.config.auth.codeSendsPerProjectHour, durations.HOUR, 'sign-in codes for this project');
    } catch (err) {
      this.d.onCapped?.(caller.project.slug);
      this.d.log.warn({ project: caller.project.slug }, 'sign-in code sends reached the hourly project cap');
      throw err;
    }
    const key = `send:${caller.project.id}:${env}:${channel}:${target}`;
    this.take(`${key}:h`, settings.codeSendsPerTargetHour, durations.HOUR, `${noun}s for this ${channel === 'email' ? 'address' : 'number'}`);
    this.take(`${key}:d`, settings.codeSendsPerTargetDay, durations.DAY, `${noun}s for this ${channel === 'email' ? 'address' : 'number'}`);
  }

  /**
   * Emails a sign-in message from the project's sender. A suppressed address gets the same outcome as any other
   * (and no email id): a different answer would let anyone read the project's suppression list through the form.
   */
  async mail(caller: Caller, codeFrom: string | null, message: Omit<SystemMessage, 'from'>, what: string): Promise<void> {
    const accepted = await this.d.sendSystemMail(caller, { from: await this.sender(caller, codeFrom), ...message }).catch((err: unknown) => {
      if (err instanceof ApiError && err.code === 'RECIPIENT_IN_SUPPRESSION_LIST') return undefined;
      throw err;
    });
    if (!accepted) this.d.log.info({ project: caller.project.slug }, `${what} not emailed: the address is suppressed`);
    else this.d.log.info({ project: caller.project.slug, emailId: accepted.id }, `${what} email queued`);
  }

  async send(caller: Caller, channel: Channel, target: string, ip: string, provider: ProviderConfig, codeFrom: string | null): Promise<void> {
    const env = envOf(caller);
    this.countSend(caller, channel, target, ip, await this.d.store.otpIssuedAt(caller.project.id, env, channel, target), 'code');
    const now = clock.now();
    const code = randomDigits(6);
    await this.d.store.putOtp({
      projectId: caller.project.id,
      env,
      channel,
      target,
      codeHash: this.hash(caller, channel, target, code),
      createdAt: now,
      expiresAt: now + settings.codeTtlMs,
      testCode: env === 'test' ? this.d.crypto.encrypt(code) : null,
    });
    if (env === 'test') return;
    const minutes = Math.round(settings.codeTtlMs / durations.MINUTE);
    const text = `Your ${caller.project.name} sign-in code is ${code}. It expires in ${minutes} minutes. If you did not ask for it, ignore this message.`;
    if (channel === 'sms') {
      const sender = provider.endpoints.apiUrl ? new HttpSmsSender(provider.endpoints.apiUrl, provider.clientSecret) : new LogSmsSender(this.d.log);
      await sender.send(target, text);
      return;
    }
    await this.mail(
      caller,
      codeFrom,
      {
        to: target,
        subject: `Your ${caller.project.name} sign-in code`,
        text,
        html:
          `<p>Your ${escapeHtml(caller.project.name)} sign-in code is</p><p style="font-size:28px;letter-spacing:4px"><b>${code}</b></p>` +
          `<p>It expires in ${minutes} minutes. If you did not ask for it, ignore this email.</p>`,
      },
      'sign-in code',
    );
  }

  /** The project's own code sender when its domain is verified; otherwise the platform's system sender. */
  private async sender(caller: Caller, codeFrom: string | null): Promise<string> {
    const own = codeFrom ? parseMailbox(codeFrom) : undefined;
    if (own) {
      const d = await this.d.domains.byName(caller.project.id, domainOf(own.address));
      if (d?.status === 'verified') return codeFrom!;
    }
    return this.d.config.systemFrom;
  }

  /** Consumes the code or throws INVALID_CODE, CODE_EXPIRED or TOO_MANY_ATTEMPTS. */
  async verify(caller: Caller, channel: Channel, target: string, code: string, ip: string): Promise<void> {
    this.take(`verify-ip:${caller.project.id}:${envOf(caller)}:${ip}`, settings.codeVerifiesPerIp10Min, 10 * durations.MINUTE, 'code checks from this address');
    const candidate = /^\d{6}$/.test(code) ? this.hash(caller, channel, target, code) : '';
    const result = await this.d.store.checkOtp(caller.project.id, envOf(caller), channel, target, clock.now(), settings.codeMaxAttempts, (stored) =>
      sameHex(stored, candidate),
    );
    switch (result) {
      case 'ok':
        return;
      case 'expired':
        throw new ApiError('CODE_EXPIRED', 'The code has expired; ask for a new one');
      case 'locked':
        throw new ApiError('TOO_MANY_ATTEMPTS', 'Too many wrong codes; ask for a new one');
      default:
        throw new ApiError('INVALID_CODE', 'The code is not valid');
    }
  }

  /** Test environment only: the current code of an address. */
  async testCode(caller: Caller, channel: Channel, target: string): Promise<{ code: string; expiresAt: number }> {
    const r = await this.d.store.testOtp(caller.project.id, channel, target);
    if (!r || r.expiresAt <= clock.now()) throw notFound('No active code for this address');
    return { code: this.d.crypto.decrypt(r.testCode), expiresAt: r.expiresAt };
  }
}
