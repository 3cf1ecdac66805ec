// What a claim on an idempotency key finds, judged the same way by every backend: the
// backend reads the row and writes what the judgement says, in one atomic step.
import type { IdempotencyClaim, IdempotencyRequest } from './index.js';

/** An idempotency key's row, as both backends read it. */
export interface IdempotencyRow {
  requestHash: string;
  emailIds: string[];
  status: number | null;
  body: string | null;
  expiresAt: number;
  leaseUntil: number;
}

/** insert: the key is free (absent, or its window is over): write the claim. take-over: resume an interrupted attempt. */
export type ClaimStep = { kind: 'insert' } | { kind: 'take-over'; emailIds: string[] } | Exclude<IdempotencyClaim, { kind: 'new' | 'resumed' }>;

export function judgeClaim(row: IdempotencyRow | undefined, r: IdempotencyRequest): ClaimStep {
  if (!row || row.expiresAt <= r.now) return { kind: 'insert' };
  if (row.requestHash !== r.requestHash) return { kind: 'mismatch' };
  if (row.status !== null) return { kind: 'replay', status: row.status, body: row.body ?? 'null' };
  if (row.leaseUntil > r.now) return { kind: 'in-progress' };
  return { kind: 'take-over', emailIds: row.emailIds };
}
