import type { AgentViewMode } from '../config.js';
import type { MessageClaims } from '../inbox/claims.js';

/** The markers: claims that are never pruned, one per DM and one per workspace. */
const MARKER_TS = 'agent-view';
const WORKSPACE_MARKER_CHANNEL = '*';
/** DMs known to be Messages-tab conversations, kept in memory (a DM never goes back). */
const MAX_CACHED = 10_000;

/**
 * Which conversations are agent sessions. An agent app (manifest `features.agent_view`) has a Messages tab,
 * where each DM conversation is a thread, and shows its channel threads as agent sessions too. With
 * SLACK_AGENT_VIEW=auto a DM is recognised once its Messages tab was opened (only an agent app hears
 * `app_home_opened` for it), and a workspace once any Messages tab there was.
 */
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
    await this.claims.claim({ teamId, channelId: WORKSPACE_MARKER_CHANNEL, ts: MARKER_TS }, 'agent-view');
    this.remember(`${teamId}:${channelId}`);
    this.remember(`${teamId}:${WORKSPACE_MARKER_CHANNEL}`);
  }

  /** Whether the app is an agent app in this workspace: its channel threads are agent sessions. */
  isAgentApp(teamId: string): Promise<boolean> {
    return this.isAgentView(teamId, WORKSPACE_MARKER_CHANNEL);
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
