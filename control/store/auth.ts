// Storage of the auth API (users, identities, sessions, codes, providers,
// origins). Owned by the auth area; still the one storage layer: same database,
// same group-commit writer.
import type { Db, Migration } from './db.js';
import type { GroupWriter } from './writer.js';

export const authMigrations: Migration[] = [];

export class AuthStore {
  constructor(readonly db: Db, readonly writer: GroupWriter) {}
}
