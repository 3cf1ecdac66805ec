// The keys that sign the JWTs a backend verifies offline (ES256). One key set for the deployment, in the
// database, so every node signs with the same keys; the private halves sealed with a key derived from the
// master secret. Each node keeps the set in memory (signing reads no database) and follows changes through the
// invalidator: a rotation on one node reaches the others within milliseconds (and within REFRESH_MS without Redis).
//
// Rotation with overlap: a new key is published first and signs only from `activeFrom` (PUBLISH_LEAD_MS later,
// or at once), so the JWKS caches of backends hold it before any token carries its kid; the key it replaces
// stops signing then and stays published until every token it signed has expired (OVERLAP_MS), then it goes.
import crypto, { type JsonWebKey, type KeyObject } from 'node:crypto';
import { clock } from '../../core/clock.js';
import { sealer, type Sealer } from '../../core/crypto.js';
import type { Invalidator } from '../../core/invalidation.js';
import type { Logger } from '../../core/log.js';
import type { SigningKeyRow, SigningKeys as SigningKeysStore } from '../../control/store/index.js';
import { randomToken } from '../crypto.js';
import { durations, settings } from '../settings.js';

const { SECOND, MINUTE } = durations;
/** A rotated-in key is published this long before it signs (JWKS caches: ours say 5 minutes). */
export const PUBLISH_LEAD_MS = 10 * MINUTE;
/** A retired key stays published this long: the longest token lifetime, plus clock skew and a margin. */
export const OVERLAP_MS = settings.jwtMaxTtlSeconds * SECOND + 2 * MINUTE;
/** Each node reads the key set again this often, whatever it heard (a node without Redis, a missed message). */
const REFRESH_MS = 1 * MINUTE;
const CHANNEL = 'signing-keys';

export type KeyState = 'next' | 'signing' | 'retired' | 'dropped';

/** A public JWK as the JWKS publishes it. */
export interface PublicJwk extends JsonWebKey {
  kid: string;
  alg: 'ES256';
  use: 'sig';
}

interface Loaded {
  row: SigningKeyRow;
  jwk: PublicJwk;
  /** The private key, opened once per load; never leaves this module. */
  key: KeyObject;
}

/** What the admin API and the CLI see of a key: never its private half. */
export interface KeyView {
  kid: string;
  alg: string;
  state: KeyState;
  createdAt: string;
  activeFrom: string;
  retiredAt: string | null;
  dropAfter: string | null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const b64 = (v: string | Buffer) => Buffer.from(v).toString('base64url');

export class SigningKeys {
  private readonly sealed: Sealer;
  private keys: Loaded[] | undefined;
  private loading: Promise<Loaded[]> | undefined;
  /** Loads finish out of order: only a newer one than the one applied replaces the set. */
  private started = 0;
  private applied = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: SigningKeysStore,
    secret: string,
    private readonly invalidator: Invalidator,
    private readonly log: Logger,
    /** Automatic rotation: a new key when the newest is this old (0: only by the admin API and the CLI). */
    private readonly rotateEveryMs = 0,
  ) {
    this.sealed = sealer(secret, 'jwt signing keys');
    invalidator.subscribe(CHANNEL, () => void this.reload().catch(this.failed));
    // Messages may have been missed: read the set again (the one held stays usable: its keys are still published).
    invalidator.onReset(() => void this.reload().catch(this.failed));
  }

  private readonly failed = (err: unknown) => this.log.warn({ err }, 'could not read the JWT signing keys');

  /** At start: the first key if there is none (nodes racing: one makes it), the set loaded, then kept fresh. */
  async start(): Promise<void> {
    await this.store.createFirst(this.newKey(clock.now(), clock.now()));
    await this.reload();
    this.timer = setInterval(() => void this.maintain().catch(this.failed), REFRESH_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /**
   * Every REFRESH_MS: the automatic rotation when it is due (the store lets one node do it), dropped keys deleted,
   * the set read again.
   */
  async maintain(): Promise<void> {
    const now = clock.now();
    const cutoff = now - this.rotateEveryMs;
    // Due by what this node holds (a key pair is made only then); the store decides among the nodes.
    const due = this.rotateEveryMs > 0 && (this.keys ?? []).every((k) => k.row.createdAt < cutoff);
    if (due && (await this.store.rotate(this.newKey(now, now + PUBLISH_LEAD_MS), OVERLAP_MS, cutoff))) {
      this.log.info('JWT signing key rotated (automatic)');
      this.invalidator.publish(CHANNEL, 'rotated');
    }
    await this.store.prune(now);
    await this.reload();
  }

  private newKey(now: number, activeFrom: number): SigningKeyRow {
    const kid = randomToken('', 12);
    const { publicKey, privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    return {
      kid,
      alg: 'ES256',
      publicJwk: JSON.stringify(publicKey.export({ format: 'jwk' })),
      privateJwk: this.sealed.seal(JSON.stringify(privateKey.export({ format: 'jwk' }))),
      createdAt: now,
      activeFrom,
      retiredAt: null,
      dropAfter: null,
    };
  }

  private reload(): Promise<Loaded[]> {
    const seq = ++this.started;
    const p = this.store.list().then((rows) => {
      const keys = rows.map((row) => ({
        row,
        jwk: { ...(JSON.parse(row.publicJwk) as JsonWebKey), kid: row.kid, alg: row.alg, use: 'sig' } as PublicJwk,
        key: crypto.createPrivateKey({ key: JSON.parse(this.sealed.open(row.privateJwk)) as JsonWebKey, format: 'jwk' }),
      }));
      if (seq > this.applied) {
        this.applied = seq;
        this.keys = keys;
      }
      return this.keys!;
    });
    const done = () => {
      if (this.loading === p) this.loading = undefined;
    };
    p.then(done, done);
    this.loading = p;
    return p;
  }

  private async set(): Promise<Loaded[]> {
    return this.keys ?? this.loading ?? this.reload();
  }

  private static stateOf(row: SigningKeyRow, signer: SigningKeyRow | undefined, now: number): KeyState {
    if (row.dropAfter !== null && row.dropAfter <= now) return 'dropped';
    if (row.activeFrom > now) return 'next';
    return row === signer ? 'signing' : 'retired';
  }

  /** The key that signs at `now`: of the keys that have started and not retired, the newest. */
  private static signerOf(keys: Loaded[], now: number): Loaded | undefined {
    let best: Loaded | undefined;
    for (const k of keys)
      if (k.row.activeFrom <= now && (k.row.retiredAt === null || k.row.retiredAt > now) && (!best || k.row.activeFrom >= best.row.activeFrom)) best = k;
    return best;
  }

  /** A compact JWS (ES256) of `claims`, signed by the current key; no database read once the set is loaded. */
  async sign(claims: Record<string, unknown>): Promise<string> {
    const now = clock.now();
    let signer = SigningKeys.signerOf(await this.set(), now);
    // None signs (a set read before a rotation took effect elsewhere): read it again once.
    if (!signer) signer = SigningKeys.signerOf(await this.reload(), now);
    if (!signer) throw new Error('no JWT signing key is active');
    const input = `${b64(JSON.stringify({ alg: 'ES256', typ: 'JWT', kid: signer.row.kid }))}.${b64(JSON.stringify(claims))}`;
    const sig = crypto.sign('sha256', Buffer.from(input), { key: signer.key, dsaEncoding: 'ieee-p1363' });
    return `${input}.${sig.toString('base64url')}`;
  }

  /** The public keys to publish at `now` (the next key, the signing one, retired ones until dropped). */
  async jwks(): Promise<{ keys: PublicJwk[] }> {
    const now = clock.now();
    return { keys: (await this.set()).filter((k) => k.row.dropAfter === null || k.row.dropAfter > now).map((k) => k.jwk) };
  }

  /** Every key with its state, for the operator. */
  async list(): Promise<KeyView[]> {
    const keys = await this.reload();
    const now = clock.now();
    const signer = SigningKeys.signerOf(keys, now)?.row;
    return keys.map(({ row }) => ({
      kid: row.kid,
      alg: row.alg,
      state: SigningKeys.stateOf(row, signer, now),
      createdAt: iso(row.createdAt)!,
      activeFrom: iso(row.activeFrom)!,
      retiredAt: iso(row.retiredAt),
      dropAfter: iso(row.dropAfter),
    }));
  }

  /** A new key, published now and signing after PUBLISH_LEAD_MS (or at once with `now`); every node hears of it. */
  async rotate(now = false): Promise<KeyView> {
    const at = clock.now();
    const next = this.newKey(at, now ? at : at + PUBLISH_LEAD_MS);
    await this.store.rotate(next, OVERLAP_MS);
    this.invalidator.publish(CHANNEL, next.kid);
    await this.reload();
    return (await this.list()).find((k) => k.kid === next.kid)!;
  }
}
