import type { AgentViewMode } from '../config.js';
import type { MessageClaims } from '../inbox/claims.js';

/** The markers: claims that are never pruned, one per DM and one per workspace. */
const MARKER_TS = 'agent-view';
const WORKSPACE_MARKER_CHANNEL = '*';
/** DMs known to be Messages-tab conversations, kept in memory (a DM never goes back). */
const MAX_CACHED = 10_000;
/**
 * How long "not an agent app (yet)" is believed for a workspace without asking the store again: every channel
 * message asks, and a classic app is asked forever. Another replica's first Messages tab of a workspace is
 * noticed this late, at worst: once per workspace.
 */
const NOT_AGENT_APP_TTL_MS = 10_000;

/**
 * Which conversations are agent sessions. An agent app (manifest `features.agent_view`) has a Messages tab,
 * where each DM conversation is a thread, and shows its channel threads as agent sessions too. With
 * SLACK_AGENT_VIEW=auto a DM is recognised once its Messages tab was opened (only an agent app hears
 * `app_home_opened` for it), and a workspace once any Messages tab there was.
 */
export class AgentViewConversations {
  private readonly known = new Set<string>();
  /** Workspaces not known as agent apps, and until when that is believed. */
  private readonly notAgentAppUntil = new Map<string, number>();

  constructor(
    private readonly claims: MessageClaims,
    readonly mode: AgentViewMode,
    private readonly notAgentAppTtlMs = NOT_AGENT_APP_TTL_MS,
  ) {}

  /** Records that this DM is the Messages tab of an agent app (from `app_home_opened`), for all replicas. */
  async markOpened(teamId: string, channelId: string): Promise<void> {
    if (this.mode !== 'auto' || this.known.has(`${teamId}:${channelId}`)) return;
    await this.claims.claim({ teamId, channelId, ts: MARKER_TS }, 'agent-view');
    await this.claims.claim({ teamId, channelId: WORKSPACE_MARKER_CHANNEL, ts: MARKER_TS }, 'agent-view');
    this.remember(`${teamId}:${channelId}`);
    this.remember(`${teamId}:${WORKSPACE_MARKER_CHANNEL}`);
    this.notAgentAppUntil.delete(teamId);
  }

  /** Whether the app is an agent app in this workspace: its channel threads are agent sessions. */
  async isAgentApp(teamId: string): Promise<boolean> {
    if ((this.notAgentAppUntil.get(teamId) ?? 0) > Date.now()) return false;
    const agentApp = await this.isAgentView(teamId, WORKSPACE_MARKER_CHANNEL);
    if (agentApp) this.notAgentAppUntil.delete(teamId);
    else {
      if (this.notAgentAppUntil.size >= MAX_CACHED) this.notAgentAppUntil.clear();
      this.notAgentAppUntil.set(teamId, Date.now() + this.notAgentAppTtlMs);
    }
    return agentApp;
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
