import type { types } from '@slack/bolt';
import type { AgentFor } from '../../../agent/routing.js';
import { type InboundMessage, indicatorOf, jobKey } from '../../../conversation/jobs.js';
import { resetNotAllowedText } from '../../../conversation/notices.js';
import type { MessageClaims, MessageRef } from '../../../inbox/claims.js';
import type { Inbox } from '../../../inbox/inbox.js';
import { mayBeForgotten } from '../../../inbox/retention.js';
import type { Worker } from '../../../inbox/worker.js';
import { botUserIdHere } from '../../../installations/workspace-scope.js';
import type { Logger } from '../../../observability/logger.js';
import type { BotMetrics } from '../../../observability/metrics.js';
import type { Tracing } from '../../../observability/tracing.js';
import {
  agentViewIn,
  type Conversation,
  conversationOf,
  type MessageConversation,
} from '../../../sessions/conversation-of.js';
import type { SessionManager } from '../../../sessions/manager.js';
import { threadKeyString } from '../../../sessions/thread-key.js';
import type { AgentFeatures } from '../../../slack-out/agent-features.js';
import type { WorkIndicators } from '../../../slack-out/indicators.js';
import type { ReplyTarget } from '../../../slack-out/reply-target.js';
import type { SlackWrites } from '../../../slack-out/writes.js';
import type { AccessPolicy } from '../../access.js';
import { controlWordOf, enterpriseOf, fromMention, fromMessage, type HumanMessage } from '../../events.js';
import { accessRefusalText, admissionRefusalText, MAX_OPEN_PER_THREAD } from '../../refusals.js';
import type { ThreadResets } from '../../resets.js';
import type { AfterAck, EventRouter } from './router.js';
import { type StopDeps, stopConversation } from './stop.js';

export interface MessageDeps extends StopDeps {
  inbox: Pick<Inbox, 'admit' | 'hasThread' | 'stop'>;
  claims: Pick<MessageClaims, 'claim'>;
  sessions: Pick<SessionManager, 'existing'>;
  resets: Pick<ThreadResets, 'request'>;
  replies: Pick<SlackWrites, 'ephemeral' | 'notice'>;
  indicators: Pick<WorkIndicators, 'showQueued' | 'clearQueued'>;
  agentFeatures: Pick<AgentFeatures, 'mode' | 'offersAgentView' | 'update'>;
  access: Pick<AccessPolicy, 'check'>;
  agentFor: AgentFor;
  botUserId: string;
  /** Thread replies reach the agent only when they mention the bot. */
  mentionOnly: boolean;
  /** Requests per user per minute; 0: no limit. */
  userRateLimit: number;
  /** The Slack request's trace is recorded with the work it asks for. */
  tracing: Pick<Tracing, 'traceparent'>;
  /** Records a message job claimed for this process when it has room: it then starts at once. */
  worker: Pick<Worker, 'recording'>;
  /** Called once a message job is recorded unclaimed, so a worker takes it at once. */
  onRecorded: () => void;
  metrics: Pick<BotMetrics, 'eventsDeduplicated'>;
  logger: Pick<Logger, 'debug'>;
}

/** Messages for the agent: mentions, DMs, and replies in threads the bot is part of. */
export function register(events: EventRouter, deps: MessageDeps): void {
  events.on('app_mention', async (envelope, after) => {
    const { event, team_id: teamId, event_id: eventId } = envelope;
    const message = fromMention(
      event as unknown as types.AppMentionEvent,
      teamId,
      botUserIdHere(deps.botUserId),
    );
    if (!message) {
      events.ignore(event.type, 'not-from-a-person');
      return;
    }
    // An edit sends a mention again, at any age: one the inbox may have forgotten may have been answered.
    if ('edited' in event && event.edited && mayBeForgotten(message.ts)) {
      events.ignore(event.type, 'edit-of-a-forgotten-message');
      return;
    }
    const conversation = conversationIn(deps, message, enterpriseOf(envelope));
    // In a 1:1 DM every message also arrives as `message`; that path owns it.
    if (conversation.isDm) {
      events.ignore(event.type, 'dm-duplicate');
      return;
    }
    await acceptMessage(events, deps, { ...message, eventId }, conversation, false, after);
  });

  events.on('message', async (envelope, after) => {
    const { event, team_id: teamId, event_id: eventId } = envelope;
    const message = fromMessage(
      event as unknown as types.AllMessageEvents,
      teamId,
      botUserIdHere(deps.botUserId),
    );
    if (!message) {
      events.ignore(event.type, 'not-from-a-person');
      return;
    }
    const conversation = conversationIn(deps, message, enterpriseOf(envelope));
    if (conversation.isDm) {
      await acceptMessage(events, deps, { ...message, eventId }, conversation, false, after);
      return;
    }
    // Channels and group DMs: replies in a thread the bot is part of, without a mention (a mention also
    // arrives as app_mention and is taken from there).
    if (!conversation.isReply) events.ignore(event.type, 'not-in-a-thread');
    else if (message.mentionsBot) events.ignore(event.type, 'taken-as-mention');
    else if (deps.mentionOnly) events.ignore(event.type, 'mention-only');
    else await acceptMessage(events, deps, { ...message, eventId }, conversation, true, after);
  });
}

function conversationIn(
  deps: Pick<MessageDeps, 'agentFeatures'>,
  message: Pick<HumanMessage, 'teamId' | 'channel' | 'ts' | 'threadTs'>,
  enterpriseId: string | undefined,
): MessageConversation {
  return conversationOf(
    {
      teamId: message.teamId,
      enterpriseId,
      channelId: message.channel,
      ts: message.ts,
      threadTs: message.threadTs,
    },
    agentViewIn(deps.agentFeatures, message.teamId),
  );
}

/** Access, control words, then the message is recorded as a job (or refused, privately, once). */
async function acceptMessage(
  events: EventRouter,
  deps: MessageDeps,
  message: HumanMessage,
  conversation: Conversation,
  followUp: boolean,
  after: AfterAck[],
): Promise<void> {
  const { inbox, claims, replies } = deps;
  const { thread, replyThreadTs } = conversation;
  const threadKey = threadKeyString(thread);
  const eventType = followUp || conversation.isDm ? 'message' : 'app_mention';
  const ref: MessageRef = { teamId: message.teamId, channelId: message.channel, ts: message.ts };
  const target: ReplyTarget = { channel: message.channel, threadTs: replyThreadTs };

  if (followUp && !(await isBotInThread(deps, conversation, threadKey))) {
    events.ignore(eventType, 'not-in-a-bot-thread');
    return;
  }
  const decision = deps.access.check({
    teamId: message.teamId,
    userTeamId: message.userTeam,
    channelId: message.channel,
    userId: message.user,
  });
  if (decision !== 'allowed') {
    events.ignore(eventType, decision);
    if (decision !== 'team-not-allowed' && (await claims.claim(ref, 'refusal'))) {
      after.push(() => replies.ephemeral(target, message.user, accessRefusalText(decision)));
    }
    return;
  }

  // Control words count only when addressed to the bot (a mention, or a 1:1 DM), and once per message.
  const command =
    conversation.isDm || message.mentionsBot
      ? controlWordOf(message.text, botUserIdHere(deps.botUserId))
      : undefined;
  if (command === 'stop') {
    await stopConversation(deps, conversation, message.user, ref, after);
    return;
  }
  if (command === 'reset') {
    const decided = await deps.resets.request(
      {
        thread,
        ts: message.ts,
        replyThreadTs,
        agentView: conversation.agentView,
        traceparent: deps.tracing.traceparent(),
      },
      message.ts,
      message.user,
    );
    if (decided.outcome === 'not-allowed' && (await claims.claim(ref, 'refusal'))) {
      after.push(() => replies.ephemeral(target, message.user, resetNotAllowedText(decided.starter)));
    }
    return;
  }

  const inbound: InboundMessage = {
    thread,
    ts: message.ts,
    userId: message.user,
    text: message.text,
    replyThreadTs,
    hasFiles: message.hasFiles,
    eventId: message.eventId,
    agentViewDm: conversation.agentViewDm,
    agentView: conversation.agentView,
    traceparent: deps.tracing.traceparent(),
  };
  const { outcome, queued, claimed } = await deps.worker.recording((claim) =>
    inbox.admit(
      {
        threadKey,
        dedupeKey: jobKey(thread.teamId, thread.channelId, message.ts, 'message'),
        kind: 'message',
        payload: inbound,
        userId: message.user,
        enterpriseId: thread.enterpriseId,
      },
      { maxOpenPerThread: MAX_OPEN_PER_THREAD, userPerMinute: deps.userRateLimit },
      claim,
    ),
  );
  if (outcome === 'duplicate') {
    deps.metrics.eventsDeduplicated.inc({ type: eventType });
    deps.logger.debug({ eventId: message.eventId, ts: message.ts }, 'duplicate delivery ignored');
    return;
  }
  // A delivery after (or during) the app's removal there: nothing can be answered, nothing is started.
  if (outcome === 'workspace-removed') {
    events.ignore(eventType, outcome);
    return;
  }
  if (outcome === 'rate-limited' || outcome === 'thread-full') {
    events.ignore(eventType, outcome);
    const text = admissionRefusalText(outcome, deps.userRateLimit);
    if (await claims.claim(ref, 'refusal')) after.push(() => replies.ephemeral(target, message.user, text));
    return;
  }
  if (queued) after.push(() => deps.indicators.showQueued(indicatorOf(inbound)));
  if (!claimed) deps.onRecorded();
}

/** Whether a thread reply without a mention belongs to a conversation the bot is part of. */
async function isBotInThread(
  deps: Pick<MessageDeps, 'sessions' | 'inbox' | 'agentFor'>,
  conversation: Conversation,
  threadKey: string,
): Promise<boolean> {
  const { thread } = conversation;
  const session = await deps.sessions.existing(thread, deps.agentFor(thread));
  return session !== undefined || (await deps.inbox.hasThread(threadKey));
}
