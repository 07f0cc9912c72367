import type { App } from '@slack/bolt';
import { RESET_FAILED_TEXT, resetNotAllowedText } from '../../../conversation/notices.js';
import type { Logger } from '../../../observability/logger.js';
import type { Tracing } from '../../../observability/tracing.js';
import { agentViewIn, conversationOf, conversationOfThread } from '../../../sessions/conversation-of.js';
import type { AgentFeatures } from '../../../slack-out/agent-features.js';
import type { SlackWrites } from '../../../slack-out/writes.js';
import { UNACKNOWLEDGED_AFTER_MS } from '../../http-receiver.js';
import type { ThreadResets } from '../../resets.js';
import { type RequestRefusalDeps, requestRefusal } from './refusal.js';

export const RESET_SHORTCUT_CALLBACK_ID = 'reset_conversation';
/** How long the shortcut waits for its reset to be recorded before it acknowledges anyway. */
const ACKNOWLEDGE_WITHIN_MS = UNACKNOWLEDGED_AFTER_MS - 500;

export interface ResetShortcutDeps extends RequestRefusalDeps {
  resets: Pick<ThreadResets, 'request'>;
  /** In the agent view a top-level DM message starts its own thread, so it is reset as one. */
  agentFeatures: Pick<AgentFeatures, 'mode' | 'offersAgentView'>;
  tracing: Pick<Tracing, 'traceparent'>;
  replies: Pick<SlackWrites, 'respond'>;
  logger: Pick<Logger, 'error'>;
}

/** The "Reset conversation" message shortcut: resets the conversation of the message it was used on. */
export function register(app: App, deps: ResetShortcutDeps): void {
  app.shortcut(RESET_SHORTCUT_CALLBACK_ID, async ({ shortcut, ack }) => {
    if (shortcut.type !== 'message_action') {
      await ack();
      return;
    }
    const message = shortcut.message as { ts: string; thread_ts?: string };
    const channelId = shortcut.channel.id;
    const teamId = shortcut.team?.id ?? shortcut.user.team_id ?? '';
    const enterpriseId = shortcut.enterprise?.id ?? undefined;
    const userId = shortcut.user.id;
    const answer = (text: string) => deps.replies.respond(shortcut.response_url, text);
    let acknowledged = false;
    const acknowledge = async () => {
      if (acknowledged) return;
      acknowledged = true;
      await ack();
    };
    // Slack never sends a shortcut again: it is acknowledged within its 3 s from here, however long the store
    // takes with the per-person limit and the reset's recording (both recorded before, when the store is quick).
    const onTime = setTimeout(() => {
      acknowledge().catch((error: unknown) =>
        deps.logger.error({ err: error }, 'could not acknowledge a shortcut'),
      );
    }, ACKNOWLEDGE_WITHIN_MS);
    try {
      const refused = await requestRefusal(deps, {
        teamId,
        userTeamId: shortcut.user.team_id,
        channelId,
        userId,
      });
      if (refused) {
        await acknowledge();
        await answer(refused);
        return;
      }
      // A message with thread_ts is in (or is the root of) a thread: that thread is reset. Otherwise the
      // message's own conversation (in a classic 1:1 DM, the DM's main one).
      const agentView = agentViewIn(deps.agentFeatures, teamId);
      const conversation =
        message.thread_ts === undefined
          ? conversationOf({ teamId, enterpriseId, channelId, ts: message.ts }, agentView)
          : conversationOfThread(
              { teamId, channelId, threadTs: message.thread_ts, ...(enterpriseId ? { enterpriseId } : {}) },
              agentView,
            );
      // Recorded before the acknowledgement, like events, so a crash right after it still resets the thread.
      const decided = await deps.resets.request(
        {
          thread: conversation.thread,
          replyThreadTs: conversation.replyThreadTs,
          responseUrl: shortcut.response_url,
          agentView: conversation.agentView,
          traceparent: deps.tracing.traceparent(),
        },
        shortcut.action_ts,
        userId,
      );
      await acknowledge();
      if (decided.outcome === 'not-allowed') await answer(resetNotAllowedText(decided.starter));
    } catch (error) {
      deps.logger.error({ err: error }, 'could not record a conversation reset');
      await acknowledge();
      await answer(RESET_FAILED_TEXT);
    } finally {
      clearTimeout(onTime);
    }
  });
}
