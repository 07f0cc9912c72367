import type { Database } from '../store/database.js';
import { MESSAGE_MEMORY_DAYS } from './retention.js';
import type { UserLimit } from './user-limit.js';

/** Finished jobs forgotten per statement: each one well inside the statement timeout. */
const PRUNE_BATCH = 5_000;

/** Forgets what the inbox no longer needs, in batches each well inside the statement timeout. */
export class InboxPruning {
  constructor(
    private readonly db: Database,
    private readonly userLimit: UserLimit,
  ) {}

  /**
   * Forgets finished jobs older than Slack's retry and edit horizon (their keys dedupe until then), and
   * request counts older than the per-user limit's minute.
   */
  async prune(olderThanDays = MESSAGE_MEMORY_DAYS, batch = PRUNE_BATCH): Promise<number> {
    // In batches: a backlog (a first clean-up after weeks) deleted in one statement outlasts the statement
    // timeout, and would then fail every hour.
    let pruned = 0;
    for (;;) {
      const rows = await this.db.query(
        `DELETE FROM inbox WHERE id IN (
           SELECT id FROM inbox WHERE finished_at < now() - make_interval(days => $1) LIMIT $2)
         RETURNING 1`,
        [olderThanDays, batch],
      );
      pruned += rows.length;
      if (rows.length < batch) break;
    }
    await this.userLimit.prune();
    return pruned;
  }
}
