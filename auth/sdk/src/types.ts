// The auth API's resources as the SDK hands them out (spec: Resources and fields).

/**
 * A signed-in person. Every sign-in answer carries a subset of these fields
 * (the email code answer: id and email); the SDK completes them from the
 * session endpoint after a sign-in, so a hook's `user` usually has them all.
 */
export interface User {
  id: string;
  email?: string | null;
  emailVerified?: boolean;
  name?: string | null;
  avatarUrl?: string | null;
  phone?: string | null;
  username?: string | null;
  /** The provider id the user signed in with (google, vk, yandex, telegram, github, email, sms, …). */
  provider?: string;
  /** ISO 8601, UTC. */
  createdAt?: string;
  lastSignIn?: string;
}

export interface Session {
  id: string;
  /** ISO 8601, UTC; the token is invalid after it. */
  expiresAt: string;
  /** The address the session was opened from, when the server tells it (GET /session does not). */
  ip?: string;
  /** The browser the session was opened from, when the server tells it (GET /session does not). */
  userAgent?: string;
}

export type ProviderId = 'google' | 'vk' | 'yandex' | 'telegram' | 'github' | 'oidc' | 'email' | 'sms';
export type Method = 'oauth' | 'id_token' | 'silent_token' | 'instant_token' | 'oidc' | 'widget' | 'miniapp' | 'otp' | 'magic_link';

export interface Provider {
  id: string;
  name: string;
  methods: string[];
}

export interface SignedIn {
  token: string;
  user: User;
}

/** The data a Telegram Login Widget hands the page (every field it sent, hash included). */
export interface TelegramWidgetData {
  id: number;
  first_name?: string;
  last_name?: string;
  username?: string;
  photo_url?: string;
  auth_date: number;
  hash: string;
  [field: string]: string | number | undefined;
}

export interface HostedConfig {
  slug: string;
  name: string;
  logoUrl: string | null;
  providers: Array<{ id: string; name: string; nameRu?: string; methods: Array<'oauth' | 'otp' | 'magic_link'> }>;
  codeLength: number;
  codeTtlSeconds: number;
  resendAfterSeconds: number;
}

/** A passkey of the signed-in user (never its key). */
export interface Passkey {
  id: string;
  name: string;
  /** ISO 8601, UTC. */
  createdAt: string;
  lastUsedAt: string | null;
  /** multiDevice: a synced passkey (backup eligible). */
  deviceType: 'singleDevice' | 'multiDevice';
  backedUp: boolean;
  transports: string[];
}
export type {
  PublicKeyCredentialCreationOptionsJSON as PasskeyCreationOptions,
  PublicKeyCredentialRequestOptionsJSON as PasskeyRequestOptions,
  RegistrationResponseJSON as PasskeyRegistration,
  AuthenticationResponseJSON as PasskeyAssertion,
} from '@simplewebauthn/browser';
export type TwoFactorMethod = 'totp' | 'backup_code';

/** A sign-in held for its second factor, as the 401 TWO_FACTOR_REQUIRED answer carries it (pendingOf(err)). */
export interface TwoFactorPending {
  /** Single use, 5 minutes: send it with the code to verifyTwoFactor (or enrolTwoFactor when `enrol`). */
  pendingToken: string;
  /** The factors that can finish it; empty when `enrol`. */
  methods: TwoFactorMethod[];
  /** The project requires a second factor and this user has none yet: enrol first. */
  enrol: boolean;
  /** ISO 8601. */
  expiresAt: string;
}

/** What the React provider shows of a held sign-in (the ticket stays inside). */
export type TwoFactorPrompt = Omit<TwoFactorPending, 'pendingToken'>;

/** A new authenticator-app secret: type `secret`, or scan `qrCode` (a data: URL for an <img src>). */
export interface TotpSetup {
  secret: string;
  otpauthUri: string;
  qrCode: string;
}

export interface TwoFactorStatus {
  mode: 'optional' | 'required';
  totp: boolean;
  /** ISO 8601, or null when off. */
  confirmedAt: string | null;
  backupCodesLeft: number;
}
/** A JWT of the session for the app's own backend (POST /api/v1/auth/token), verified there against the JWKS. */
export interface SessionJwt {
  /** ES256; claims iss, sub (user id), aud, project, project_id, sid, provider, env, iat, nbf, exp, jti. */
  token: string;
  /** ISO 8601: at most 10 minutes away, never past the session's end. */
  expiresAt: string;
}
