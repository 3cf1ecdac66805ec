// Magic links in PostgreSQL. A link is spent by one conditional UPDATE … RETURNING: the row
// lock makes racers on any nodes take turns, and only the first still finds used_at NULL.
import type { Env, MagicLinkRow, MagicLinks, MagicLinkTake, NewMagicLink } from '../index.js';
import type { PgDb } from './db.js';

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

export class PgMagicLinks implements MagicLinks {
  constructor(private readonly db: PgDb) {}

  async put(l: NewMagicLink): Promise<void> {
    await this.db.query(
      `INSERT INTO auth_magic_links (token_hash, project_id, env, email, callback_url, client_challenge, created_at, expires_at, used_at, test_token)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, $9)`,
      [l.tokenHash, l.projectId, l.env, l.email, l.callbackUrl, l.clientChallenge, l.createdAt, l.expiresAt, l.testToken],
    );
  }

  async peek(tokenHash: string): Promise<MagicLinkRow | undefined> {
    const r = (await this.db.query<Row>('SELECT * FROM auth_magic_links WHERE token_hash = $1', [tokenHash])).rows[0];
    return r && toLink(r);
  }

  async take(tokenHash: string, now: number): Promise<MagicLinkTake> {
    const r = (
      await this.db.query<Row>(
        `UPDATE auth_magic_links SET used_at = $2, test_token = NULL
         WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING *`,
        [tokenHash, now],
      )
    ).rows[0];
    if (r) return { status: 'ok', link: toLink(r) };
    const old = await this.peek(tokenHash);
    if (!old) return { status: 'unknown' };
    return { status: old.usedAt !== null ? 'used' : 'expired' };
  }

  async lastSentAt(projectId: string, env: Env, email: string): Promise<number | undefined> {
    const r = await this.db.query<{ at: number | null }>(
      'SELECT max(created_at) AS at FROM auth_magic_links WHERE project_id = $1 AND env = $2 AND email = $3',
      [projectId, env, email],
    );
    return r.rows[0]?.at ?? undefined;
  }

  async testToken(projectId: string, email: string, now: number): Promise<{ testToken: string; expiresAt: number } | undefined> {
    const r = (
      await this.db.query<{ test_token: string; expires_at: number }>(
        `SELECT test_token, expires_at FROM auth_magic_links
         WHERE project_id = $1 AND env = 'test' AND email = $2 AND used_at IS NULL AND expires_at > $3 AND test_token IS NOT NULL
         ORDER BY created_at DESC LIMIT 1`,
        [projectId, email, now],
      )
    ).rows[0];
    return r && { testToken: r.test_token, expiresAt: r.expires_at };
  }

  async prune(now: number): Promise<number> {
    return (await this.db.query('DELETE FROM auth_magic_links WHERE expires_at < $1', [now])).rowCount ?? 0;
  }
}
