import type { Database } from '../store/database.js';

export interface ViewingKey {
  teamId: string;
  /** The app's DM with the person (their Messages tab), when Slack names it. */
  dmChannel?: string;
  userId?: string;
}

/**
 * Which channel each person is looking at while talking to the bot in its Messages tab (Slack's
 * `app_context_changed`), and which one the agent was last told about: the next prompt mentions the channel
 * only when it changed. Keyed by the person (Slack's documented event names no DM), or by the DM when Slack
 * names no person. Holds ids only.
 */
export class ViewingContext {
  constructor(private readonly db: Database) {}

  /** Records what the person now views (undefined: nothing the app is told about). */
  async record(key: ViewingKey, channelId: string | undefined): Promise<void> {
    const rowKey = keyOf(key);
    if (!rowKey) return;
    await this.db.query(
      `INSERT INTO viewing_context (team_id, viewer, channel_id, updated_at) VALUES ($1, $2, $3, now())
       ON CONFLICT (team_id, viewer) DO UPDATE SET channel_id = EXCLUDED.channel_id, updated_at = now()`,
      [key.teamId, rowKey, channelId ?? null],
    );
  }

  /** The channel the person views now, if the agent has not been told about it yet (it is then marked told). */
  async takeChange(key: ViewingKey): Promise<string | undefined> {
    const viewers = [key.dmChannel, key.userId && `user:${key.userId}`].filter(
      (viewer): viewer is string => !!viewer,
    );
    const rows = await this.db.query<{ channel_id: string }>(
      `UPDATE viewing_context SET told_channel_id = channel_id
       WHERE team_id = $1 AND viewer = ANY($2::text[]) AND channel_id IS NOT NULL
         AND channel_id IS DISTINCT FROM told_channel_id
       RETURNING channel_id`,
      [key.teamId, viewers],
    );
    return rows[0]?.channel_id;
  }

  /** Forgets what people looked at more than a day ago: no context for today's prompts, and not kept. */
  async prune(): Promise<number> {
    const rows = await this.db.query(
      `DELETE FROM viewing_context WHERE updated_at < now() - interval '1 day' RETURNING 1`,
    );
    return rows.length;
  }
}

function keyOf(key: ViewingKey): string | undefined {
  return key.userId ? `user:${key.userId}` : key.dmChannel;
}
