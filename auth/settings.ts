// The auth area's numbers, in one place. Candidates for POSTGATE_CONFIG
// (auth.*) once core/config.ts carries them; until then these are the values.
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

export const settings = {
  /** Email and SMS codes: 6 digits, valid 10 minutes at most, 5 wrong tries per code. */
  codeTtlMs: 10 * MINUTE,
  codeMaxAttempts: 5,
  /** A new code for the same address no sooner than this. */
  codeResendCooldownMs: 60 * SECOND,
  /** Codes sent to one address: per hour and per day (5 tries each: ≤100 guesses a day, NIST 800-63B §5.2.2). */
  codeSendsPerTargetHour: 5,
  codeSendsPerTargetDay: 20,
  /** Codes requested from one client IP per hour. */
  codeSendsPerIpHour: 30,
  /** Code verifications from one client IP per 10 minutes. */
  codeVerifiesPerIp10Min: 60,
  /** The one-time `svc_code` after OAuth: short (ASVS L3: ≤1 minute). */
  exchangeCodeTtlMs: 1 * MINUTE,
  /** An OAuth transaction (state, PKCE verifier, nonce) waits this long for the provider's callback. */
  oauthStateTtlMs: 10 * MINUTE,
  /** Default session lifetime; per project in `auth set --session-ttl`. */
  sessionTtlMs: 30 * DAY,
  /** Telegram widget / Mini App `auth_date` window; per project in `auth set --telegram-window`. */
  telegramWindowMs: 10 * MINUTE,
  /** `auth_date` may run ahead of our clock by this much (clock skew). */
  telegramFutureSkewMs: 1 * MINUTE,
  /** id_token `exp`/`iat` tolerance. */
  jwtClockToleranceSec: 5,
  /** Requests to providers give up after this. */
  providerTimeoutMs: 10 * SECOND,
  /** Sessions kept in the in-process cache. */
  sessionCacheMax: 100_000,
  /** Expired states, codes and replay records are deleted this often. */
  pruneEveryMs: 10 * MINUTE,
  /** Default lifetime of a project's JWTs (auth/jwt); per project in `auth set --jwt-ttl`, at most jwtMaxTtlSeconds. */
  jwtTtlSeconds: 300,
  jwtMaxTtlSeconds: 600,
  /** A sign-in held for its second factor (auth/two-factor) waits this long. */
  pendingSignInTtlMs: 5 * MINUTE,
} as const;

export const durations = { SECOND, MINUTE, HOUR, DAY };
