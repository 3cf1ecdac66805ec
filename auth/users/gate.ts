// The ban gate: every new session passes the sign-in gates before its token is handed out
// (auth/sessions.ts), so a ban refuses every sign-in path at once (codes, OAuth exchange, provider tokens,
// passkeys, a finished second factor). Registered before the second factor's gate: a banned user is not
// asked for one.
import { ApiError } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import type { BanRow, UserAdmin } from '../../control/store/index.js';
import type { Admission, PendingSignIn, SignInGate } from '../sessions.js';

/** A ban in force at `now`: set, and without an end or with one still ahead. */
export const banned = (ban: BanRow | null, now = clock.now()): ban is BanRow => ban !== null && (ban.expiresAt === null || ban.expiresAt > now);

/** USER_BANNED, with the end of the ban when it has one. */
export function bannedError(ban: BanRow): ApiError {
  if (ban.expiresAt === null) return new ApiError('USER_BANNED', 'This account is banned');
  const until = new Date(ban.expiresAt).toISOString();
  return new ApiError('USER_BANNED', `This account is banned until ${until}`, { bannedUntil: until });
}

export class BanGate implements SignInGate {
  constructor(private readonly users: UserAdmin) {}

  async admit(a: Admission): Promise<PendingSignIn | undefined> {
    const ban = await this.users.banOf(a.user.id);
    if (banned(ban)) throw bannedError(ban);
    return undefined;
  }
}
