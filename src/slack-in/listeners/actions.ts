import type { App, BlockAction, ButtonAction } from '@slack/bolt';
import { type InboundMessage, jobKey } from '../../conversation/jobs.js';
import { rateLimitedText, refusalText } from '../../conversation/notices.js';
import type { MessageClaims } from '../../inbox/claims.js';
import type { Inbox } from '../../inbox/inbox.js';
import type { Logger } from '../../observability/logger.js';
import type { BotMetrics } from '../../observability/metrics.js';
import type { Tracing } from '../../observability/tracing.js';
import { DM_MAIN_THREAD } from '../../sessions/thread-key.js';
import {
  FEEDBACK_ACTION_ID,
  parseFeedback,
  SEND_AGAIN_ACTION_ID,
  sentAgainBlocks,
} from '../../slack-out/blocks.js';
import type { SlackWrites } from '../../slack-out/writes.js';
import type { AccessPolicy } from '../access.js';
import type { AgentViewConversations } from '../agent-view.js';
import { MAX_OPEN_PER_THREAD } from './events.js';

export interface ActionOptions {
  inbox: Pick<Inbox, 'admit' | 'requestOf'>;
  claims: Pick<MessageClaims, 'claim'>;
  replies: Pick<SlackWrites, 'respond' | 'updateMessage'>;
  access: AccessPolicy;
  agentViewConversations: AgentViewConversations;
  userRateLimit: number;
  /** Called once a job is recorded, so a worker takes it at once. */
  onRecorded: () => void;
  metrics: BotMetrics;
  logger: Logger;
  tracing: Pick<Tracing, 'traceparent'>;
}

/** Buttons on the bot's messages: feedback under answers, and Send again on a lost answer's notice. */
export function registerActions(app: App, options: ActionOptions): void {
  const { logger } = options;

  app.action<BlockAction>(FEEDBACK_ACTION_ID, async ({ ack, body, action }) => {
    await ack();
    const feedback = parseFeedback('value' in action ? (action.value as string | undefined) : undefined);
    const messageTs = body.container.message_ts as string | undefined;
    const channel = body.channel?.id ?? (body.container.channel_id as string | undefined);
    if (!feedback || !messageTs || !channel) return;
    try {
      // Counted once per person, answer and value, however often the button is pressed.
      const first = await options.claims.claim(
        {
          teamId: body.team?.id ?? '',
          channelId: channel,
          ts: `${messageTs}:${body.user.id}:${feedback.value}`,
        },
        'feedback',
      );
      if (first) {
        options.metrics.replyFeedback.inc({ agent: feedback.agentId, value: feedback.value });
        logger.info(
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
      await options.replies.respond(body.response_url, 'Thanks for the feedback!');
    } catch (error) {
      logger.warn({ err: error }, 'could not record feedback on an answer');
    }
  });

  app.action<BlockAction<ButtonAction>>(SEND_AGAIN_ACTION_ID, async ({ ack, body, action }) => {
    await ack();
    const say = (text: string) => options.replies.respond(body.response_url, text);
    const noticeTs = body.container.message_ts as string | undefined;
    const teamId = body.team?.id ?? body.user.team_id ?? '';
    const userId = body.user.id;
    const channel = body.channel?.id ?? (body.container.channel_id as string | undefined);
    const original = parseJobKey(action.value);
    if (!noticeTs || !channel || !original) return;
    try {
      const request = await options.inbox.requestOf(action.value ?? '');
      if (!request) {
        await say('That message is too old for me to send again. Please write it again.');
        return;
      }
      if (request.userId !== userId) {
        await say(`Only <@${request.userId}>, who wrote that message, can send it again.`);
        return;
      }
      const decision = options.access.check({
        teamId,
        userTeamId: body.user.team_id,
        channelId: channel,
        userId,
      });
      if (decision !== 'allowed') {
        await say(refusalText(decision === 'channel-not-allowed' ? decision : 'user-not-allowed'));
        return;
      }
      const [, , threadTs = original.ts] = request.threadKey.split(':');
      const replyThreadTs = threadTs === DM_MAIN_THREAD ? undefined : threadTs;
      const messagesTab =
        channel.startsWith('D') &&
        replyThreadTs !== undefined &&
        (await options.agentViewConversations.isAgentView(teamId, channel));
      const inbound: InboundMessage = {
        thread: { teamId, channelId: channel, threadTs },
        ts: original.ts,
        userId,
        text: '',
        replyThreadTs,
        hasFiles: false,
        agentThread: messagesTab,
        agentSession: channel.startsWith('D')
          ? messagesTab
          : await options.agentViewConversations.isAgentApp(teamId),
        resend: true,
        traceparent: options.tracing.traceparent(),
      };
      // Once per notice: its job's key is the notice's, so the inbox itself refuses a second press, and a
      // press the store could not record leaves nothing behind that would refuse the next one.
      const { outcome } = await options.inbox.admit(
        {
          threadKey: request.threadKey,
          dedupeKey: jobKey(teamId, channel, noticeTs, 'message'),
          kind: 'message',
          payload: inbound,
          userId,
        },
        { maxOpenPerThread: MAX_OPEN_PER_THREAD, userPerMinute: options.userRateLimit },
      );
      if (outcome === 'duplicate') {
        await say('That message was already sent again.');
        return;
      }
      if (outcome === 'rate-limited' || outcome === 'thread-full') {
        await say(
          outcome === 'rate-limited'
            ? rateLimitedText(options.userRateLimit)
            : 'This conversation is busy; try again later.',
        );
        return;
      }
      options.onRecorded();
      const text = (body.message?.text as string | undefined) ?? 'Your message was sent again.';
      await options.replies.updateMessage(channel, noticeTs, text, sentAgainBlocks(text, userId));
    } catch (error) {
      logger.error({ err: error }, 'could not send a message again');
      await say(':warning: I could not send that message again right now. Please try again shortly.');
    }
  });
}

/** `team:channel:ts:message`, a message job's key, from a Send again button. */
function parseJobKey(
  value: string | undefined,
): { teamId: string; channelId: string; ts: string } | undefined {
  const match = /^([^:]+):([^:]+):(\d+\.\d+):message$/.exec(value ?? '');
  return match?.[1] && match[2] && match[3]
    ? { teamId: match[1], channelId: match[2], ts: match[3] }
    : undefined;
}
