// API keys: `pg_live_…` / `pg_test_…` followed by 256 random bits. Only the
// SHA-256 of a key is stored (a slow hash buys nothing for 256-bit secrets);
// the plain key is shown once, at creation.
import crypto from 'node:crypto';
import type { KeyKind, KeyScope, ApiKeyRow } from '../store/index.js';

const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function base62(bytes: Buffer): string {
  let n = BigInt(`0x${bytes.toString('hex')}`);
  let out = '';
  while (n > 0n) {
    out = alphabet[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(43, '0');
}

/** One-shot SHA-256: it runs on every request. */
export const hashKey = (plain: string): string => crypto.hash('sha256', plain, 'hex');

export function kindOfKey(plain: string): KeyKind | undefined {
  if (plain.startsWith('pg_live_')) return 'live';
  if (plain.startsWith('pg_test_')) return 'test';
  return undefined;
}

export function newApiKey(projectId: string, kind: KeyKind, scope: KeyScope, now: number): { plain: string; row: ApiKeyRow & { hash: string } } {
  const plain = `pg_${kind}_${base62(crypto.randomBytes(32))}`;
  return {
    plain,
    row: {
      id: crypto.randomUUID(),
      projectId,
      kind,
      scope,
      hash: hashKey(plain),
      hint: `${plain.slice(0, 12)}…${plain.slice(-4)}`,
      createdAt: now,
      revokedAt: null,
    },
  };
}
