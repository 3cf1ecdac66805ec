// Passkeys (WebAuthn): a signed-in user registers, lists and removes them; anyone signs in with one
// (discoverable credentials). @simplewebauthn/server does the ceremonies' cryptography and CBOR; this file
// decides the relying party and keeps the state: challenges (hashed, 5 minutes, taken once on any node),
// credentials per project and environment, counters that only grow.
//
// The relying party: the ceremony runs on an origin the project allows (or postgate's own, for the hosted
// widget). Its RP ID is that origin's host, or a registrable parent domain of it the caller names (acme.com
// for app.acme.com). A credential keeps the RP ID it was made for; a sign-in is checked against it.
import crypto from 'node:crypto';
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type AuthenticatorTransport,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import net from 'node:net';
import { ApiError, invalid, notFound } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import type { Env, PasskeyRow, Passkeys, UserRow } from '../../control/store/index.js';
import { sha256 } from '../crypto.js';
import type { EventScope } from '../events.js';

export const PROVIDER = 'passkey';
/** How long a ceremony's challenge may be answered. */
export const CHALLENGE_TTL_MS = 5 * 60_000;
/** A user holds at most this many passkeys: enough for every device, not a store for a script to fill. */
export const MAX_PER_USER = 25;
const TIMEOUT_MS = 120_000;
/** ES256, EdDSA, RS256: what authenticators make (the library's default set, without the post-quantum one some runtimes add). */
const ALGORITHMS = [-7, -8, -257];

/** A passkey as the API and user management show it: never its public key. */
export interface PasskeyView {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
  deviceType: 'singleDevice' | 'multiDevice';
  backedUp: boolean;
  transports: string[];
}

const iso = (ms: number) => new Date(ms).toISOString();
export const viewOf = (k: PasskeyRow): PasskeyView => ({
  id: k.id,
  name: k.name,
  createdAt: iso(k.createdAt),
  lastUsedAt: k.lastUsedAt === null ? null : iso(k.lastUsedAt),
  deviceType: k.deviceType,
  backedUp: k.backedUp,
  transports: k.transports,
});

const refused = (message: string) => new ApiError('INVALID_CREDENTIAL', message);

/** The library's refusals (wrong origin, RP ID, signature, counter…) as INVALID_CREDENTIAL with its reason. */
async function checked<T>(verify: () => Promise<T>): Promise<T> {
  try {
    return await verify();
  } catch (err) {
    throw refused(`The passkey could not be verified: ${(err as Error).message}`);
  }
}

/** The origin's host as an RP ID, or `rpId` when it is that host or a registrable parent domain of it. */
export function rpIdFor(origin: string, rpId?: string): string {
  const host = new URL(origin).hostname;
  if (rpId === undefined || rpId === host) return host;
  const id = rpId.toLowerCase();
  // A parent domain: a suffix on a label boundary, itself of two labels at least (never a bare top-level domain).
  if (net.isIP(host) || !host.endsWith(`.${id}`) || !id.includes('.') || id.startsWith('.') || id.endsWith('.'))
    throw invalid(`rpId must be ${host} or a parent domain of it`);
  return id;
}

/** The challenge the browser signed and, in a cross-origin frame, the top page's origin: read from the client data (JSON; no CBOR). */
function clientDataOf(clientDataJSON: unknown): { challenge: string; topOrigin: string | undefined } {
  if (typeof clientDataJSON !== 'string') throw invalid('response.response.clientDataJSON is required');
  let d: { challenge?: unknown; topOrigin?: unknown } = {};
  try {
    d = JSON.parse(Buffer.from(clientDataJSON, 'base64url').toString('utf8')) as typeof d;
  } catch {
    /* refused below */
  }
  const c = d?.challenge;
  if (typeof c !== 'string' || !c || c.length > 128) throw refused('The passkey response carries no challenge of ours');
  return { challenge: c, topOrigin: typeof d.topOrigin === 'string' ? d.topOrigin : undefined };
}

export class PasskeyService {
  constructor(private readonly store: Passkeys) {}

  /** A fresh challenge for a ceremony, stored hashed; its base64url form goes in the options. */
  private async challenge(scope: EventScope, purpose: 'register' | 'authenticate', userId: string | null, origin: string, rpId: string) {
    const bytes = new Uint8Array(crypto.randomBytes(32));
    const text = Buffer.from(bytes).toString('base64url');
    await this.store.putChallenge({
      challengeHash: sha256(text),
      projectId: scope.projectId,
      env: scope.env,
      userId,
      purpose,
      rpId,
      origin,
      expiresAt: clock.now() + CHALLENGE_TTL_MS,
    });
    return { bytes, text };
  }

  /** Takes the challenge a response answers: once, unexpired, of this project, purpose, user and origin. */
  private async take(scope: EventScope, purpose: 'register' | 'authenticate', userId: string | null, origin: string, clientDataJSON: unknown) {
    const { challenge: text, topOrigin } = clientDataOf(clientDataJSON);
    const c = await this.store.takeChallenge(sha256(text));
    if (!c || c.projectId !== scope.projectId || c.env !== scope.env || c.purpose !== purpose || c.userId !== userId)
      throw refused('This passkey challenge is unknown or was already used');
    if (c.expiresAt <= clock.now()) throw refused('This passkey challenge has expired; start again');
    if (c.origin !== origin) throw refused(`This passkey ceremony was started on ${c.origin}, not ${origin}`);
    return { text, row: c, topOrigin };
  }

  async registrationOptions(
    scope: EventScope,
    user: UserRow,
    rp: { name: string; origin: string; rpId?: string },
  ): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const rpID = rpIdFor(rp.origin, rp.rpId);
    const mine = await this.store.listForUser(scope.projectId, scope.env, user.id);
    if (mine.length >= MAX_PER_USER) throw invalid(`A user may hold at most ${MAX_PER_USER} passkeys; remove one first`);
    const { bytes } = await this.challenge(scope, 'register', user.id, rp.origin, rpID);
    return generateRegistrationOptions({
      rpName: rp.name,
      rpID,
      userName: user.email ?? user.phone ?? user.username ?? user.name ?? user.id,
      userID: new Uint8Array(Buffer.from(user.id, 'utf8')),
      userDisplayName: user.name ?? user.email ?? user.phone ?? user.username ?? '',
      challenge: bytes,
      timeout: TIMEOUT_MS,
      attestationType: 'none',
      excludeCredentials: mine.filter((k) => k.rpId === rpID).map((k) => ({ id: k.credentialId, transports: k.transports as AuthenticatorTransport[] })),
      authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'preferred' },
      supportedAlgorithmIDs: ALGORITHMS,
    });
  }

  async register(scope: EventScope, user: UserRow, response: RegistrationResponseJSON, origin: string, name: string | undefined): Promise<PasskeyRow> {
    const { text, row } = await this.take(scope, 'register', user.id, origin, response?.response?.clientDataJSON);
    const r = await checked(() =>
      verifyRegistrationResponse({
        response,
        expectedChallenge: text,
        expectedOrigin: row.origin,
        expectedRPID: row.rpId,
        requireUserVerification: false,
        supportedAlgorithmIDs: ALGORITHMS,
      }),
    );
    if (!r.verified) throw refused('The passkey could not be verified');
    const info = r.registrationInfo;
    const now = clock.now();
    const k: PasskeyRow = {
      id: crypto.randomUUID(),
      projectId: scope.projectId,
      env: scope.env,
      userId: user.id,
      credentialId: info.credential.id,
      publicKey: info.credential.publicKey,
      counter: info.credential.counter,
      transports: info.credential.transports ?? response.response.transports ?? [],
      deviceType: info.credentialDeviceType,
      backedUp: info.credentialBackedUp,
      // A multi-device credential is one the authenticator may back up (the BE flag).
      backupEligible: info.credentialDeviceType === 'multiDevice',
      aaguid: info.aaguid,
      name: name?.trim() || defaultName(info.credentialDeviceType),
      rpId: row.rpId,
      createdAt: now,
      lastUsedAt: null,
    };
    if (!(await this.store.add(k))) throw refused('This passkey is already registered');
    return k;
  }

  async authenticationOptions(scope: EventScope, rp: { origin: string; rpId?: string }): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const rpID = rpIdFor(rp.origin, rp.rpId);
    const { bytes } = await this.challenge(scope, 'authenticate', null, rp.origin, rpID);
    // No allowCredentials: discoverable credentials, the authenticator offers the user's own (and autofill can).
    return generateAuthenticationOptions({ rpID, challenge: bytes, timeout: TIMEOUT_MS, userVerification: 'preferred', allowCredentials: [] });
  }

  /**
   * Checks a sign-in's assertion; the passkey (counter moved on) and whether the user was verified. In a
   * cross-origin frame (the hosted widget in an app's page) the top page's origin must pass `topAllowed`.
   */
  async authenticate(
    scope: EventScope,
    response: AuthenticationResponseJSON,
    origin: string,
    topAllowed: (topOrigin: string) => Promise<boolean>,
  ): Promise<{ passkey: PasskeyRow; userVerified: boolean }> {
    const { text, row, topOrigin } = await this.take(scope, 'authenticate', null, origin, response?.response?.clientDataJSON);
    if (topOrigin !== undefined && !(await topAllowed(topOrigin))) throw refused(`The page ${topOrigin} that framed this sign-in is not allowed`);
    // Looked up in this project and environment only: another project's credential is unknown here.
    const k = typeof response.id === 'string' ? await this.store.byCredentialId(scope.projectId, scope.env, response.id) : undefined;
    if (!k) throw refused('This passkey is not registered here');
    if (k.rpId !== row.rpId) throw refused(`This passkey belongs to ${k.rpId}, not ${row.rpId}`);
    const handle = response.response.userHandle;
    if (handle && handle !== Buffer.from(k.userId, 'utf8').toString('base64url')) throw refused('This passkey does not belong to its user');
    const r = await checked(() =>
      verifyAuthenticationResponse({
        response,
        expectedChallenge: text,
        expectedOrigin: row.origin,
        expectedRPID: k.rpId,
        credential: { id: k.credentialId, publicKey: new Uint8Array(k.publicKey), counter: k.counter, transports: k.transports as AuthenticatorTransport[] },
        ...(topOrigin !== undefined ? { expectedTopOrigin: topOrigin } : {}),
        requireUserVerification: false,
      }),
    );
    if (!r.verified) throw refused('The passkey could not be verified');
    const info = r.authenticationInfo;
    // Atomic: of two sign-ins with the same count (a cloned authenticator, a replay racing), one wins.
    if (!(await this.store.use(k.id, info.newCounter, info.credentialBackedUp, clock.now())))
      throw refused("This passkey's signature counter did not advance: the authenticator may have been cloned");
    return { passkey: { ...k, counter: info.newCounter, backedUp: info.credentialBackedUp }, userVerified: info.userVerified };
  }

  /** The user's passkeys (for user management too). */
  async listForUser(scope: EventScope, userId: string): Promise<PasskeyView[]> {
    return (await this.store.listForUser(scope.projectId, scope.env, userId)).map(viewOf);
  }

  /** Removes one of the user's own passkeys; NOT_FOUND for anyone else's, in any project. */
  async remove(scope: EventScope, userId: string, id: string): Promise<PasskeyRow> {
    const k = await this.store.remove(scope.projectId, scope.env, userId, id);
    if (!k) throw notFound('No such passkey');
    return k;
  }

  /** The single-use svc_code of a hosted sign-in, exchanged at /exchange-code (where the gates run). */
  async exchangeCode(
    scope: { projectId: string; env: Env },
    userId: string,
    origin: { ip: string | null; userAgent: string | null },
    ttlMs: number,
    clientChallenge: string | null,
    /** The assertion verified the user (a PIN, a biometric): the code's exchange counts it as the second factor. */
    userVerified: boolean,
  ): Promise<string> {
    const code = crypto.randomBytes(32).toString('base64url');
    const ok = await this.store.insertExchange(
      { codeHash: sha256(code), expiresAt: clock.now() + ttlMs, clientChallenge, secondFactor: userVerified },
      scope.projectId,
      scope.env,
      userId,
      PROVIDER,
      { ip: origin.ip, userAgent: origin.userAgent?.slice(0, 512) ?? null },
    );
    if (!ok) throw new ApiError('SESSION_INVALID', 'The passkey user no longer exists');
    return code;
  }

  prune(now: number): Promise<void> {
    return this.store.prune(now);
  }
}

const defaultName = (t: 'singleDevice' | 'multiDevice') => (t === 'multiDevice' ? 'Synced passkey' : 'Device passkey');
