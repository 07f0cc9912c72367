import type { App, BlockAction, ButtonAction } from '@slack/bolt';
import { type InboundMessage, jobKey } from '../../../conversation/jobs.js';
import type { Inbox } from '../../../inbox/inbox.js';
import type { Logger } from '../../../observability/logger.js';
import type { Tracing } from '../../../observability/tracing.js';
import { agentViewIn, conversationOfThread } from '../../../sessions/conversation-of.js';
import type { AgentFeatures } from '../../../slack-out/agent-features.js';
import { SEND_AGAIN_ACTION_ID, sentAgainBlocks } from '../../../slack-out/blocks.js';
import type { SlackWrites } from '../../../slack-out/writes.js';
import type { AccessPolicy } from '../../access.js';
import { accessRefusalText, admissionRefusalText, MAX_OPEN_PER_THREAD } from '../../refusals.js';

export interface SendAgainDeps {
  inbox: Pick<Inbox, 'admit' | 'requestOf'>;
  replies: Pick<SlackWrites, 'respond' | 'updateMessage'>;
  access: Pick<AccessPolicy, 'check'>;
  agentFeatures: Pick<AgentFeatures, 'mode' | 'offersAgentView'>;
  userRateLimit: number;
  /** Called once a job is recorded, so a worker takes it at once. */
  onRecorded: () => void;
  logger: Pick<Logger, 'error'>;
  tracing: Pick<Tracing, 'traceparent'>;
}

/** Send again, on the notice of an answer that was lost: the message is sent to the agent once more. */
export function register(app: App, deps: SendAgainDeps): void {
  app.action<BlockAction<ButtonAction>>(SEND_AGAIN_ACTION_ID, async ({ ack, body, action }) => {
    await ack();
    const say = (text: string) => deps.replies.respond(body.response_url, text);
    const noticeTs = body.container.message_ts as string | undefined;
    const teamId = body.team?.id ?? body.user.team_id ?? '';
    const userId = body.user.id;
    const channel = body.channel?.id ?? (body.container.channel_id as string | undefined);
    const original = parseJobKey(action.value);
    if (!noticeTs || !channel || !original) return;
    try {
      const request = await deps.inbox.requestOf(action.value ?? '');
      if (!request) {
        await say('That message is too old for me to send again. Please write it again.');
        return;
      }
      if (request.userId !== userId) {
        await say(`Only <@${request.userId}>, who wrote that message, can send it again.`);
        return;
      }
      const decision = deps.access.check({
        teamId,
        userTeamId: body.user.team_id,
        channelId: channel,
        userId,
      });
      if (decision !== 'allowed') {
        await say(accessRefusalText(decision));
        return;
      }
      const [, , threadTs = original.ts] = request.threadKey.split(':');
      const enterpriseId = body.enterprise?.id ?? undefined;
      const conversation = conversationOfThread(
        { teamId, channelId: channel, threadTs, ...(enterpriseId ? { enterpriseId } : {}) },
        agentViewIn(deps.agentFeatures, teamId),
      );
      const inbound: InboundMessage = {
        thread: conversation.thread,
        ts: original.ts,
        userId,
        text: '',
        replyThreadTs: conversation.replyThreadTs,
        hasFiles: false,
        agentViewDm: conversation.agentViewDm,
        agentView: conversation.agentView,
        resend: true,
        traceparent: deps.tracing.traceparent(),
      };
      // Once per notice: its job's key is the notice's, so the inbox itself refuses a second press, and a
      // press the store could not record leaves nothing behind that would refuse the next one.
      const { outcome } = await deps.inbox.admit(
        {
          threadKey: request.threadKey,
          dedupeKey: jobKey(teamId, channel, noticeTs, 'message'),
          kind: 'message',
          payload: inbound,
          userId,
          enterpriseId,
        },
        { maxOpenPerThread: MAX_OPEN_PER_THREAD, userPerMinute: deps.userRateLimit },
      );
      if (outcome === 'duplicate') {
        await say('That message was already sent again.');
        return;
      }
      // The app is being removed from this workspace: nothing more is sent to the agent for it.
      if (outcome === 'workspace-removed') return;
      if (outcome === 'rate-limited' || outcome === 'thread-full') {
        await say(admissionRefusalText(outcome, deps.userRateLimit));
        return;
      }
      deps.onRecorded();
      const text = (body.message?.text as string | undefined) ?? 'Your message was sent again.';
      await deps.replies.updateMessage(channel, noticeTs, text, sentAgainBlocks(text, userId));
    } catch (error) {
      deps.logger.error({ err: error }, 'could not send a message again');
      await say(':warning: I could not send that message again right now. Please try again shortly.');
    }
  });
}

/** `team:channel:ts:message`, a message job's key, from a Send again button. */
export function parseJobKey(
  value: string | undefined,
): { teamId: string; channelId: string; ts: string } | undefined {
  const match = /^([^:]+):([^:]+):(\d+\.\d+):message$/.exec(value ?? '');
  return match?.[1] && match[2] && match[3]
    ? { teamId: match[1], channelId: match[2], ts: match[3] }
    : undefined;
}
