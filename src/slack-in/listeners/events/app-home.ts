import type { Config } from '../../../config/index.js';
import type { ConversationMarks } from '../../../inbox/marks.js';
import { agentViewIn } from '../../../sessions/conversation-of.js';
import type { AgentFeatures } from '../../../slack-out/agent-features.js';
import type { SlackWrites } from '../../../slack-out/writes.js';
import type { AccessPolicy } from '../../access.js';
import { senderTeam } from '../../events.js';
import type { EventRouter } from './router.js';

/**
 * The heading of the suggested prompts in the Messages tab. Not the greeting: that is posted as a message the
 * first time, and the same words twice on one screen read as a glitch.
 */
export const SUGGESTED_PROMPTS_TITLE = 'Try asking me';

export interface AppHomeDeps {
  agentFeatures: Pick<AgentFeatures, 'mode' | 'offersAgentView' | 'setSuggestedPrompts'>;
  access: Pick<AccessPolicy, 'check'>;
  /** Who was greeted in the Messages tab. */
  marks: Pick<ConversationMarks, 'set' | 'clear'>;
  replies: Pick<SlackWrites, 'notice'>;
  /** The greeting and suggested prompts of the agent view. */
  agentView: Pick<Config['agentView'], 'greeting' | 'suggestedPrompts'>;
}

/** The agent view's Messages tab was opened: greet once and suggest prompts, after the ack. */
export function register(events: EventRouter, deps: AppHomeDeps): void {
  events.on('app_home_opened', async ({ event, team_id: teamId }, after) => {
    const channel = typeof event.channel === 'string' ? event.channel : undefined;
    const userId = typeof event.user === 'string' ? event.user : '';
    const { agentFeatures, access, marks, replies } = deps;
    const inAgentView = () => agentViewIn(agentFeatures, teamId).inDms;
    // Classic apps hear the Messages tab opened too: only an agent app greets there (Slack says which it is).
    if (event.tab !== 'messages' || !channel || !inAgentView()) {
      events.ignore(event.type, 'not-the-messages-tab');
      return;
    }
    const decision = access.check({ teamId, channelId: channel, userId, userTeamId: senderTeam(event) });
    if (decision !== 'allowed') {
      events.ignore(event.type, decision);
      return;
    }
    const conversation = { teamId, channelId: channel };
    const firstTime = await marks.set(conversation, 'greeted');
    const { greeting, suggestedPrompts } = deps.agentView;
    after.push(async () => {
      const promptsTaken =
        suggestedPrompts.length === 0 ||
        (await agentFeatures.setSuggestedPrompts(teamId, channel, SUGGESTED_PROMPTS_TITLE, suggestedPrompts));
      if (!firstTime) return;
      // Slack just said this is no agent app: its greeting would describe what the person will not get.
      if (!promptsTaken || !inAgentView()) {
        await marks.clear(conversation, 'greeted');
        return;
      }
      // A greeting that could not be posted is not used up: the next opening tries again.
      if ((await replies.notice({ channel }, greeting)) === undefined)
        await marks.clear(conversation, 'greeted');
    });
  });
}
