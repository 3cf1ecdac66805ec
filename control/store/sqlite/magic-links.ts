// Magic links in SQLite. A link is spent by one conditional UPDATE … RETURNING inside the
// writer (one savepoint): of any number of racers exactly one sees its row come back.
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import type { Env, MagicLinkRow, MagicLinks, MagicLinkTake, NewMagicLink } from '../index.js';

interface Row {
  project_id: string;
  env: Env;
  email: string;
  callback_url: string;
  client_challenge: string | null;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

const toLink = (r: Row): MagicLinkRow => ({
  projectId: r.project_id,
  env: r.env,
  email: r.email,
  callbackUrl: r.callback_url,
  clientChallenge: r.client_challenge,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  usedAt: r.used_at,
});

export class SqliteMagicLinks implements MagicLinks {
  private readonly q;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
  ) {
    const p = (sql: string) => db.prepare(sql);
    this.q = {
      put: p(`INSERT INTO auth_magic_links (token_hash, project_id, env, email, callback_url, client_challenge, created_at, expires_at, used_at, test_token)
        VALUES (@tokenHash, @projectId, @env, @email, @callbackUrl, @clientChallenge, @createdAt, @expiresAt, NULL, @testToken)`),
      peek: p('SELECT * FROM auth_magic_links WHERE token_hash = ?'),
      take: p(`UPDATE auth_magic_links SET used_at = @now, test_token = NULL
        WHERE token_hash = @hash AND used_at IS NULL AND expires_at > @now RETURNING *`),
      lastSent: p('SELECT max(created_at) FROM auth_magic_links WHERE project_id = ? AND env = ? AND email = ?').pluck(),
      testToken: p(`SELECT test_token, expires_at FROM auth_magic_links
        WHERE project_id = ? AND env = 'test' AND email = ? AND used_at IS NULL AND expires_at > ? AND test_token IS NOT NULL
        ORDER BY created_at DESC LIMIT 1`),
      prune: p('DELETE FROM auth_magic_links WHERE expires_at < ?'),
    };
  }

  put(link: NewMagicLink): Promise<void> {
    return this.writer.run(() => void this.q.put.run(link));
  }

  async peek(tokenHash: string): Promise<MagicLinkRow | undefined> {
    const r = this.q.peek.get(tokenHash) as Row | undefined;
    return r && toLink(r);
  }

  take(tokenHash: string, now: number): Promise<MagicLinkTake> {
    return this.writer.run((): MagicLinkTake => {
      const r = this.q.take.get({ hash: tokenHash, now }) as Row | undefined;
      if (r) return { status: 'ok', link: toLink(r) };
      const old = this.q.peek.get(tokenHash) as Row | undefined;
      if (!old) return { status: 'unknown' };
      return { status: old.used_at !== null ? 'used' : 'expired' };
    });
  }

  async lastSentAt(projectId: string, env: Env, email: string): Promise<number | undefined> {
    return (this.q.lastSent.get(projectId, env, email) as number | null) ?? undefined;
  }

  async testToken(projectId: string, email: string, now: number): Promise<{ testToken: string; expiresAt: number } | undefined> {
    const r = this.q.testToken.get(projectId, email, now) as { test_token: string; expires_at: number } | undefined;
    return r && { testToken: r.test_token, expiresAt: r.expires_at };
  }

  prune(now: number): Promise<number> {
    return this.writer.run(() => this.q.prune.run(now).changes);
  }
}
