import type { ViewingContext } from '../../../conversation/viewing-context.js';
import { agentViewIn, conversationOfThread } from '../../../sessions/conversation-of.js';
import type { AgentFeatures } from '../../../slack-out/agent-features.js';
import { authorizedPerson, enterpriseOf } from '../../events.js';
import type { EventRouter } from './router.js';
import { type StopDeps, stopConversation } from './stop.js';

export interface AgentViewDeps extends StopDeps {
  agentFeatures: Pick<AgentFeatures, 'mode' | 'offersAgentView' | 'update'>;
  /** What each person looks at in the Messages tab. */
  viewing: Pick<ViewingContext, 'record'>;
}

/** The most relevant channel among what Slack says the person is looking at (`context.entities`). */
function viewedChannelOf(context: unknown): string | undefined {
  const entities = (context as { entities?: unknown } | undefined)?.entities;
  if (!Array.isArray(entities)) return undefined;
  for (const entity of entities as { type?: unknown; value?: unknown }[]) {
    if (entity.type === 'slack#/types/channel_id' && typeof entity.value === 'string') return entity.value;
  }
  return undefined;
}

/** Events only the agent view sends: what the person is looking at, and Slack's stop button. */
export function register(events: EventRouter, deps: AgentViewDeps): void {
  // Which channel the person is looking at while in the Messages tab. Slack's event is only `context`; the
  // viewer is the envelope's person (a `user` or `channel` on the event, which @slack/types declares, is read too).
  events.on('app_context_changed', async (envelope) => {
    const { event, team_id: teamId } = envelope;
    if (deps.agentFeatures.mode === 'off') {
      events.ignore(event.type, 'agent-view-off');
      return;
    }
    const userId = typeof event.user === 'string' ? event.user : authorizedPerson(envelope);
    const dmChannel = typeof event.channel === 'string' ? event.channel : undefined;
    if (!userId && !dmChannel) {
      events.ignore(event.type, 'no-viewer');
      return;
    }
    await deps.viewing.record({ teamId, dmChannel, userId }, viewedChannelOf(event.context));
  });

  // Stop pressed in Slack's UI on an agent-view conversation: the same as mentioning the bot with `stop` there.
  events.on('agent_session_stopped', async (envelope, after) => {
    const { event, team_id: teamId, event_id: eventId } = envelope;
    const enterpriseId = enterpriseOf(envelope);
    const channel = typeof event.channel === 'string' ? event.channel : undefined;
    const threadTs = typeof event.thread_ts === 'string' ? event.thread_ts : undefined;
    const userId = typeof event.user === 'string' ? event.user : undefined;
    if (!channel || !threadTs || !userId) {
      events.ignore(event.type, 'no-thread');
      return;
    }
    const conversation = conversationOfThread(
      { teamId, channelId: channel, threadTs, ...(enterpriseId ? { enterpriseId } : {}) },
      agentViewIn(deps.agentFeatures, teamId),
      { slackShowsAgentView: true },
    );
    await stopConversation(
      deps,
      conversation,
      userId,
      { teamId, channelId: channel, ts: `stop:${eventId ?? threadTs}` },
      after,
    );
  });
}
