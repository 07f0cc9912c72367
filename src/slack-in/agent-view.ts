import type { AgentViewMode } from '../config/index.js';
import type { AgentFeatures } from '../slack-out/agent-features.js';

/**
 * Which conversations are agent sessions. An agent app (manifest `features.agent_view`) has a Messages tab,
 * where each DM conversation is a thread, and shows its channel threads as agent sessions too. Decided from
 * what Slack states, never from `app_home_opened` (Slack sends it for the Messages tab to classic apps too):
 * SLACK_AGENT_VIEW, and with `auto` Slack's own "not an agent app" answer, remembered per workspace.
 */
export class AgentViewConversations {
  readonly mode: AgentViewMode;

  constructor(readonly features: AgentFeatures) {
    this.mode = features.mode;
  }

  /** Whether the app is an agent app in this workspace: its channel threads are agent sessions. */
  async isAgentApp(teamId: string): Promise<boolean> {
    return this.features.isAgentApp(teamId);
  }

  /** Whether messages in this DM are Messages-tab conversations (one thread and session each). */
  async isAgentView(teamId: string, _channelId: string): Promise<boolean> {
    if (this.mode !== 'auto') return this.mode === 'on';
    return this.features.isAgentApp(teamId);
  }
}
