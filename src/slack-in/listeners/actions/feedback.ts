import type { App, BlockAction } from '@slack/bolt';
import type { MessageClaims } from '../../../inbox/claims.js';
import type { Logger } from '../../../observability/logger.js';
import type { BotMetrics } from '../../../observability/metrics.js';
import { FEEDBACK_ACTION_ID, parseFeedback } from '../../../slack-out/blocks.js';
import type { SlackWrites } from '../../../slack-out/writes.js';

export interface FeedbackDeps {
  claims: Pick<MessageClaims, 'claim'>;
  replies: Pick<SlackWrites, 'respond'>;
  metrics: Pick<BotMetrics, 'replyFeedback'>;
  logger: Pick<Logger, 'info' | 'warn'>;
}

/** The feedback buttons under answers: counted once per person, answer and value. */
export function register(app: App, deps: FeedbackDeps): void {
  app.action<BlockAction>(FEEDBACK_ACTION_ID, async ({ ack, body, action }) => {
    await ack();
    const feedback = parseFeedback('value' in action ? (action.value as string | undefined) : undefined);
    const messageTs = body.container.message_ts as string | undefined;
    const channel = body.channel?.id ?? (body.container.channel_id as string | undefined);
    if (!feedback || !messageTs || !channel) return;
    try {
      // Counted once per person, answer and value, however often the button is pressed.
      const first = await deps.claims.claim(
        {
          teamId: body.team?.id ?? '',
          channelId: channel,
          ts: `${messageTs}:${body.user.id}:${feedback.value}`,
        },
        'feedback',
      );
      if (first) {
        deps.metrics.replyFeedback.inc({ agent: feedback.agentId, value: feedback.value });
        deps.logger.info(
          {
            agentId: feedback.agentId,
            session: feedback.sessionId,
            value: feedback.value,
            channel,
            messageTs,
          },
          'feedback on an answer',
        );
      }
      await deps.replies.respond(body.response_url, 'Thanks for the feedback!');
    } catch (error) {
      deps.logger.warn({ err: error }, 'could not record feedback on an answer');
    }
  });
}
