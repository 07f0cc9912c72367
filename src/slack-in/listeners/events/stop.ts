import { inboundMessageOf, indicatorOf } from '../../../conversation/jobs.js';
import { stoppedNotice } from '../../../conversation/notices.js';
import type { MessageRef } from '../../../inbox/claims.js';
import type { Inbox } from '../../../inbox/inbox.js';
import type { Conversation } from '../../../sessions/conversation-of.js';
import { threadKeyString } from '../../../sessions/thread-key.js';
import type { AgentFeatures } from '../../../slack-out/agent-features.js';
import type { WorkIndicators } from '../../../slack-out/indicators.js';
import type { SlackWrites } from '../../../slack-out/writes.js';
import type { AfterAck } from './router.js';

export interface StopDeps {
  inbox: Pick<Inbox, 'stop'>;
  agentFeatures: Pick<AgentFeatures, 'update'>;
  indicators: Pick<WorkIndicators, 'clearQueued'>;
  replies: Pick<SlackWrites, 'notice'>;
}

/**
 * `stop` from a person (the word, or Slack's stop button): their waiting messages are cancelled and the
 * answer being computed for their message is dropped (the agent service cannot cancel it), or its prompt
 * never sent if it had not left yet; nobody else's.
 * Once per request; the notice after the ack.
 */
export async function stopConversation(
  deps: StopDeps,
  conversation: Conversation,
  userId: string,
  request: MessageRef,
  after: AfterAck[],
): Promise<void> {
  const { thread, replyThreadTs } = conversation;
  const { first, cancelled, stoppedWork, othersGoOn } = await deps.inbox.stop(
    threadKeyString(thread),
    userId,
    request,
  );
  if (!first) return;
  after.push(async () => {
    // Slack leaves the status to the app on a stop (docs: agent_session_stopped). With nothing left to do the
    // session is ready for the next message (the button goes); while someone else's message is still being
    // answered it stays as that job set it, which that job ends itself (setting it here could land after that end).
    // Only a session the bot opened: setStatus would create one in a thread that never had one.
    if (conversation.agentView && replyThreadTs && !othersGoOn) {
      await deps.agentFeatures.update(
        { teamId: thread.teamId, channelId: thread.channelId, threadTs: replyThreadTs },
        'active',
      );
    }
    // Cancelled messages were waiting, so each shows the "queued" indicator.
    for (const message of cancelled.map(inboundMessageOf))
      await deps.indicators.clearQueued(indicatorOf(message));
    await deps.replies.notice(
      { channel: thread.channelId, threadTs: replyThreadTs },
      stoppedNotice(cancelled.length, stoppedWork),
    );
  });
}
