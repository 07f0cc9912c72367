import type { AgentViewMode } from '../config.js';
import type { MessageClaims } from '../inbox/claims.js';

/** The marker: a claim that is never pruned, one per DM. */
const MARKER_TS = 'agent-view';
/** DMs known to be Messages-tab conversations, kept in memory (a DM never goes back). */
const MAX_CACHED = 10_000;

/** Which DMs are conversations in the app's Messages tab (agent experience) rather than a classic DM. */
export class AgentViewConversations {
  private readonly known = new Set<string>();

  constructor(
    private readonly claims: MessageClaims,
    readonly mode: AgentViewMode,
  ) {}

  /** Records that this DM is the Messages tab of an agent app (from `app_home_opened`), for all replicas. */
  async markOpened(teamId: string, channelId: string): Promise<void> {
    if (this.mode !== 'auto' || this.known.has(`${teamId}:${channelId}`)) return;
    await this.claims.claim({ teamId, channelId, ts: MARKER_TS }, 'agent-view');
    this.remember(`${teamId}:${channelId}`);
  }

  /** Whether messages in this DM are Messages-tab conversations (one thread and session each). */
  async isAgentView(teamId: string, channelId: string): Promise<boolean> {
    if (this.mode !== 'auto') return this.mode === 'on';
    const key = `${teamId}:${channelId}`;
    if (this.known.has(key)) return true;
    const marked = await this.claims.isClaimed({ teamId, channelId, ts: MARKER_TS }, 'agent-view');
    if (marked) this.remember(key);
    return marked;
  }

  private remember(key: string): void {
    if (this.known.size >= MAX_CACHED) this.known.clear();
    this.known.add(key);
  }
}
