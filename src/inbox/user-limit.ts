import type { Database } from '../store/database.js';

/** The per-user limit counts requests over this window: `$n` requests per minute. */
export const USER_LIMIT_WINDOW = `interval '1 minute'`;
/** How long request rows are kept: well beyond the window, for a slow prune. */
const KEPT_FOR = `interval '10 minutes'`;

/**
 * The per-user limit across replicas: each request (a prompt, a command, the reset shortcut, Send again) is a
 * row of `user_requests`; a person with `perMinute` rows in the last minute is refused. Prompts are charged
 * in the statement that records them (the queue's admit); everything else here.
 */
export class UserLimit {
  constructor(private readonly db: Database) {}

  /** Counts a request (a command, a shortcut, a button) against the user's limit; false when over it. */
  async charge(userId: string, perMinute: number): Promise<boolean> {
    if (perMinute === 0) return true;
    const rows = await this.db.query(
      `INSERT INTO user_requests (user_id)
       SELECT $1 WHERE (SELECT count(*) FROM user_requests WHERE user_id = $1 AND at > now() - ${USER_LIMIT_WINDOW}) < $2
       RETURNING 1`,
      [userId, perMinute],
    );
    return rows.length > 0;
  }

  /** Forgets requests older than any window still counted. */
  async prune(): Promise<void> {
    await this.db.query(`DELETE FROM user_requests WHERE at < now() - ${KEPT_FOR}`);
  }
}
