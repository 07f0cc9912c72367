import type { SqlDatabase } from '../db/database.js';

/**
 * `on` / `off` force Slack's agent experience for every DM or for none; `auto` recognises it per DM: only
 * an app installed with `features.agent_view` (manifest.yml) subscribes to `app_home_opened`, and Slack
 * sends it when the person opens the Messages tab, before they can type there.
 */
export type AgentViewMode = 'auto' | 'on' | 'off';

/** The marker's row in handled_messages: never pruned, one per DM. */
const MARKER_TS = 'agent-view';
const MARKER_PURPOSE = 'agent-view';
/** DMs known to be Messages-tab conversations, kept in memory (a DM never goes back). */
const MAX_CACHED = 10_000;

/** Which DMs are conversations in the app's Messages tab (agent experience) rather than a classic DM. */
export class AgentViewConversations {
  private readonly known = new Set<string>();

  constructor(
    private readonly db: SqlDatabase,
    readonly mode: AgentViewMode,
  ) {}

  /** Records that this DM is the Messages tab of an agent app (from `app_home_opened`), for all replicas. */
  async markOpened(teamId: string, channelId: string): Promise<void> {
    if (this.mode !== 'auto' || this.known.has(`${teamId}:${channelId}`)) return;
    await this.db.query(
      `INSERT INTO handled_messages (team_id, channel_id, message_ts, purpose) VALUES ($1, $2, $3, $4)
       ON CONFLICT DO NOTHING`,
      [teamId, channelId, MARKER_TS, MARKER_PURPOSE],
    );
    this.remember(`${teamId}:${channelId}`);
  }

  /** Whether messages in this DM are Messages-tab conversations (one thread and session each). */
  async isAgentView(teamId: string, channelId: string): Promise<boolean> {
    if (this.mode !== 'auto') return this.mode === 'on';
    const key = `${teamId}:${channelId}`;
    if (this.known.has(key)) return true;
    const rows = await this.db.query(
      'SELECT 1 FROM handled_messages WHERE team_id = $1 AND channel_id = $2 AND message_ts = $3 AND purpose = $4',
      [teamId, channelId, MARKER_TS, MARKER_PURPOSE],
    );
    if (rows.length > 0) this.remember(key);
    return rows.length > 0;
  }

  private remember(key: string): void {
    if (this.known.size >= MAX_CACHED) this.known.clear();
    this.known.add(key);
  }
}
