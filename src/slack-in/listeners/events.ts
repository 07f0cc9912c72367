import type { types } from '@slack/bolt';
import type { Config } from '../../config/index.js';
import { type InboundMessage, indicatorOf, jobKey } from '../../conversation/jobs.js';
import {
  DELETED_BEFORE_SENT_NOTICE,
  EDIT_NOT_RESENT_NOTICE,
  queueFullNotice,
  rateLimitedText,
  refusalText,
  resetNotAllowedText,
  stoppedNotice,
} from '../../conversation/notices.js';
import type { ViewingContext } from '../../conversation/viewing-context.js';
import type { MessageClaims, MessageRef } from '../../inbox/claims.js';
import type { Inbox } from '../../inbox/inbox.js';
import type { ConversationMarks } from '../../inbox/marks.js';
import type { Logger } from '../../observability/logger.js';
import type { BotMetrics } from '../../observability/metrics.js';
import type { Tracing } from '../../observability/tracing.js';
import type { SessionManager } from '../../sessions/manager.js';
import { type ThreadKey, threadKeyString } from '../../sessions/thread-key.js';
import type { WorkIndicators } from '../../slack-out/indicators.js';
import type { ReplyTarget } from '../../slack-out/reply-target.js';
import type { SlackWrites } from '../../slack-out/writes.js';
import type { AccessPolicy } from '../access.js';
import type { AgentViewConversations } from '../agent-view.js';
import {
  authorizedPerson,
  controlWordOf,
  deletionOf,
  type EventEnvelope,
  editOf,
  fromMention,
  fromMessage,
  type HumanMessage,
  type MessageDeletion,
  type MessageEdit,
  placementOf,
  senderTeam,
} from '../events.js';
import type { ThreadResets } from '../resets.js';

/** The Events API event types the bot acts on; manifest.yml must subscribe to each (a test checks). */
export const HANDLED_EVENTS = [
  'app_mention',
  'message',
  'channel_archive',
  'group_archive',
  'channel_deleted',
  'group_deleted',
  'app_uninstalled',
  'tokens_revoked',
  'app_home_opened',
  'agent_session_stopped',
  'app_context_changed',
] as const;

export type HandledEvent = (typeof HANDLED_EVENTS)[number];

/**
 * The heading of the suggested prompts in the Messages tab. Not the greeting: that is posted as a message the
 * first time, and the same words twice on one screen read as a glitch.
 */
export const SUGGESTED_PROMPTS_TITLE = 'Try asking me';

/** Bounds one thread's backlog; far beyond what a person types while waiting for one answer. */
export const MAX_OPEN_PER_THREAD = 20;

/** The most relevant channel among what Slack says the person is looking at (`context.entities`). */
function viewedChannelOf(context: unknown): string | undefined {
  const entities = (context as { entities?: unknown } | undefined)?.entities;
  if (!Array.isArray(entities)) return undefined;
  for (const entity of entities as { type?: unknown; value?: unknown }[]) {
    if (entity.type === 'slack#/types/channel_id' && typeof entity.value === 'string') return entity.value;
  }
  return undefined;
}

export interface EventIntakeOptions {
  inbox: Inbox;
  claims: MessageClaims;
  /** Who was greeted in the Messages tab. */
  marks: Pick<ConversationMarks, 'set' | 'clear'>;
  sessions: SessionManager;
  resets: ThreadResets;
  replies: SlackWrites;
  indicators: WorkIndicators;
  agentFor: (channelId: string) => string;
  botUserId: string;
  /** Thread replies reach the agent only when they mention the bot. */
  mentionOnly: boolean;
  agentView: Config['agentView'];
  agentViewConversations: AgentViewConversations;
  /** What each person looks at in the Messages tab. */
  viewing: ViewingContext;
  /** The Slack request's trace is recorded with the work it asks for. */
  tracing: Pick<Tracing, 'traceparent'>;
  access: AccessPolicy;
  /** Requests per user per minute; 0: no limit. */
  userRateLimit: number;
  /** Called once a message job is recorded, so a worker takes it at once. */
  onRecorded: () => void;
  metrics: BotMetrics;
  logger: Logger;
}

/** A side effect for after the acknowledgement (notices, reactions): best effort, never delaying the ack. */
type AfterAck = () => Promise<void>;
type EventHandler = (envelope: EventEnvelope, after: AfterAck[]) => Promise<void>;

/**
 * What each Slack event does, before Slack is told it arrived: everything the bot must not lose is written to
 * the store (a job in the inbox, a session to retire). If that fails the event is not acknowledged, so Slack
 * delivers it again; retries and double deliveries find their job already recorded.
 */
export class EventIntake {
  constructor(private readonly options: EventIntakeOptions) {}

  async accept(envelope: EventEnvelope): Promise<void> {
    const { metrics, access, logger } = this.options;
    metrics.eventsReceived.inc({ type: envelope.event.type });
    if (!access.servesTeam(envelope.team_id)) {
      this.ignore(envelope.event.type, 'team-not-allowed');
      return;
    }
    const after: AfterAck[] = [];
    const handler = this.handlers[envelope.event.type as HandledEvent] as EventHandler | undefined;
    if (handler) await handler(envelope, after);
    else this.ignore(envelope.event.type, 'not-handled');
    for (const effect of after) {
      effect().catch((error: unknown) => logger.warn({ err: error }, 'could not show a notice or indicator'));
    }
  }

  /** One entry per Events API event the bot acts on; HANDLED_EVENTS (and the manifest test) derive from it. */
  private readonly handlers: Record<HandledEvent, EventHandler> = {
    app_mention: async ({ event, team_id: teamId, event_id: eventId }, after) => {
      const message = fromMention(event as unknown as types.AppMentionEvent, teamId, this.options.botUserId);
      // In a 1:1 DM every message also arrives as `message`; that path owns it.
      if (!message || message.isDm) {
        this.ignore(event.type, message ? 'dm-duplicate' : 'not-from-a-person');
        return;
      }
      await this.acceptMessage({ ...message, eventId }, false, after);
    },
    message: async ({ event, team_id: teamId, event_id: eventId }, after) => {
      const messageEvent = event as unknown as types.AllMessageEvents;
      const edit = editOf(messageEvent, teamId, this.options.botUserId);
      if (edit) {
        await this.acceptEdit(edit, after);
        return;
      }
      const deletion = deletionOf(messageEvent, teamId);
      if (deletion) {
        await this.acceptDeletion(deletion, after);
        return;
      }
      const message = fromMessage(messageEvent, teamId, this.options.botUserId);
      if (!message) {
        this.ignore(event.type, 'not-from-a-person');
        return;
      }
      if (message.isDm) {
        await this.acceptMessage({ ...message, eventId }, false, after);
        return;
      }
      // Channels and group DMs: replies in a thread the bot is part of, without a mention (a mention also
      // arrives as app_mention and is taken from there).
      const inThread = message.threadTs !== undefined && message.threadTs !== message.ts;
      if (!inThread) this.ignore(event.type, 'not-in-a-thread');
      else if (message.mentionsBot) this.ignore(event.type, 'taken-as-mention');
      else if (this.options.mentionOnly) this.ignore(event.type, 'mention-only');
      else await this.acceptMessage({ ...message, eventId }, true, after);
    },
    channel_archive: (envelope, after) => this.channelGone(envelope, after),
    group_archive: (envelope, after) => this.channelGone(envelope, after),
    channel_deleted: (envelope, after) => this.channelGone(envelope, after),
    group_deleted: (envelope, after) => this.channelGone(envelope, after),
    app_uninstalled: (envelope) => this.workspaceGone(envelope),
    tokens_revoked: async (envelope) => {
      // Revoking only user tokens leaves the bot working; only a revoked bot token ends the workspace.
      const tokens = envelope.event.tokens as { bot?: unknown[] } | undefined;
      if ((tokens?.bot?.length ?? 0) > 0) await this.workspaceGone(envelope);
      else this.ignore(envelope.event.type, 'user-tokens-only');
    },
    // The agent experience: the Messages tab was opened; greet and suggest prompts after the ack.
    app_home_opened: async ({ event, team_id: teamId }, after) => {
      const channel = typeof event.channel === 'string' ? event.channel : undefined;
      const userId = typeof event.user === 'string' ? event.user : '';
      const { agentViewConversations, access, marks, replies } = this.options;
      // Classic apps hear the Messages tab opened too: only an agent app greets there (Slack says which it is).
      if (
        event.tab !== 'messages' ||
        !channel ||
        !(await agentViewConversations.isAgentView(teamId, channel))
      ) {
        this.ignore(event.type, 'not-the-messages-tab');
        return;
      }
      const decision = access.check({ teamId, channelId: channel, userId, userTeamId: senderTeam(event) });
      if (decision !== 'allowed') {
        this.ignore(event.type, decision);
        return;
      }
      const conversation = { teamId, channelId: channel };
      const firstTime = await marks.set(conversation, 'greeted');
      const { greeting, suggestedPrompts } = this.options.agentView;
      const { features } = agentViewConversations;
      after.push(async () => {
        const agentApp =
          suggestedPrompts.length === 0 ||
          (await features.setSuggestedPrompts(teamId, channel, SUGGESTED_PROMPTS_TITLE, suggestedPrompts));
        if (!firstTime) return;
        // Slack just said this is no agent app: its greeting would describe what the person will not get.
        if (!agentApp || !(await agentViewConversations.isAgentView(teamId, channel))) {
          await marks.clear(conversation, 'greeted');
          return;
        }
        // A greeting that could not be posted is not used up: the next opening tries again.
        if ((await replies.notice({ channel }, greeting)) === undefined)
          await marks.clear(conversation, 'greeted');
      });
    },
    // The agent experience: which channel the person is looking at while in the Messages tab. Slack's event is
    // only `context`; the viewer is the envelope's person (a `user` or `channel` on the event, which
    // @slack/types declares, is read too).
    app_context_changed: async (envelope) => {
      const { event, team_id: teamId } = envelope;
      if (this.options.agentViewConversations.mode === 'off') {
        this.ignore(event.type, 'agent-view-off');
        return;
      }
      const userId = typeof event.user === 'string' ? event.user : authorizedPerson(envelope);
      const dmChannel = typeof event.channel === 'string' ? event.channel : undefined;
      if (!userId && !dmChannel) {
        this.ignore(event.type, 'no-viewer');
        return;
      }
      await this.options.viewing.record({ teamId, dmChannel, userId }, viewedChannelOf(event.context));
    },
    // Stop pressed in Slack's UI on an agent conversation: the same as mentioning the bot with `stop` there.
    agent_session_stopped: async ({ event, team_id: teamId, event_id: eventId }, after) => {
      const channel = typeof event.channel === 'string' ? event.channel : undefined;
      const threadTs = typeof event.thread_ts === 'string' ? event.thread_ts : undefined;
      const userId = typeof event.user === 'string' ? event.user : undefined;
      if (!channel || !threadTs || !userId) {
        this.ignore(event.type, 'no-thread');
        return;
      }
      const thread: ThreadKey = { teamId, channelId: channel, threadTs };
      await this.stop(
        thread,
        { channel, threadTs },
        userId,
        { teamId, channelId: channel, ts: `stop:${eventId ?? threadTs}` },
        true,
        after,
      );
    },
  };

  private async channelGone({ event, team_id: teamId }: EventEnvelope, after: AfterAck[]): Promise<void> {
    const channelId = String(event.channel);
    const retired = await this.options.sessions.retireWhere({ teamId, channelId }, 'channel-gone');
    await this.options.inbox.cancelOpenWithPrefix(`${teamId}:${channelId}:`);
    // Best effort: Slack may refuse calls in an archived channel, and a deleted one has no threads left.
    if (event.type.endsWith('_archive')) {
      after.push(() => this.options.agentViewConversations.features.close(retired));
    }
    this.options.logger.info(
      { team: teamId, channel: channelId, event: event.type, count: retired.length },
      'channel closed; its agent sessions are being deleted',
    );
  }

  private async workspaceGone({ event, team_id: teamId }: EventEnvelope): Promise<void> {
    const retired = await this.options.sessions.retireWhere({ teamId }, 'workspace-gone');
    await this.options.inbox.cancelOpenWithPrefix(`${teamId}:`);
    this.options.logger.info(
      { team: teamId, event: event.type, count: retired.length },
      'app removed from the workspace; its agent sessions are being deleted',
    );
  }

  private ignore(type: string, reason: string): void {
    this.options.metrics.eventsIgnored.inc({ type, reason });
  }

  private async acceptMessage(message: HumanMessage, followUp: boolean, after: AfterAck[]): Promise<void> {
    const { inbox, claims, replies, access } = this.options;
    const agentView =
      message.isDm &&
      (await this.options.agentViewConversations.isAgentView(message.teamId, message.channel));
    const { thread, replyThreadTs } = placementOf(message, agentView);
    const threadKey = threadKeyString(thread);
    const eventType = followUp || message.isDm ? 'message' : 'app_mention';
    const agentSession = message.isDm
      ? agentView && replyThreadTs !== undefined
      : await this.options.agentViewConversations.isAgentApp(message.teamId);
    const ref: MessageRef = { teamId: message.teamId, channelId: message.channel, ts: message.ts };
    const target: ReplyTarget = { channel: message.channel, threadTs: replyThreadTs };

    if (followUp && !(await this.isBotInThread(thread, threadKey))) {
      this.ignore(eventType, 'not-in-a-bot-thread');
      return;
    }
    const decision = access.check({
      teamId: message.teamId,
      userTeamId: message.userTeam,
      channelId: message.channel,
      userId: message.user,
    });
    if (decision !== 'allowed') {
      this.ignore(eventType, decision);
      if (decision !== 'team-not-allowed' && (await claims.claim(ref, 'refusal'))) {
        after.push(() => replies.ephemeral(target, message.user, refusalText(decision)));
      }
      return;
    }

    // Control words count only when addressed to the bot (a mention, or a 1:1 DM), and once per message.
    const command =
      message.isDm || message.mentionsBot ? controlWordOf(message.text, this.options.botUserId) : undefined;
    if (command === 'stop') {
      await this.stop(thread, target, message.user, ref, agentSession, after);
      return;
    }
    if (command === 'reset') {
      const decided = await this.options.resets.request(
        {
          thread,
          ts: message.ts,
          replyThreadTs,
          agentSession,
          traceparent: this.options.tracing.traceparent(),
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
      agentThread: agentView && replyThreadTs !== undefined,
      agentSession,
      traceparent: this.options.tracing.traceparent(),
    };
    const limit = this.options.userRateLimit;
    const { outcome, queued } = await inbox.admit(
      {
        threadKey,
        dedupeKey: jobKey(thread.teamId, thread.channelId, message.ts, 'message'),
        kind: 'message',
        payload: inbound,
        userId: message.user,
      },
      { maxOpenPerThread: MAX_OPEN_PER_THREAD, userPerMinute: limit },
    );
    if (outcome === 'duplicate') {
      this.options.metrics.eventsDeduplicated.inc({ type: eventType });
      this.options.logger.debug({ eventId: message.eventId, ts: message.ts }, 'duplicate delivery ignored');
      return;
    }
    if (outcome === 'rate-limited' || outcome === 'thread-full') {
      this.ignore(eventType, outcome);
      const text = outcome === 'rate-limited' ? rateLimitedText(limit) : queueFullNotice(MAX_OPEN_PER_THREAD);
      if (await claims.claim(ref, 'refusal')) after.push(() => replies.ephemeral(target, message.user, text));
      return;
    }
    if (queued) after.push(() => this.options.indicators.showQueued(indicatorOf(inbound)));
    this.options.onRecorded();
  }

  /**
   * `stop` from a person (the word, or Slack's stop button): their waiting messages are cancelled and the
   * answer being computed for their message is dropped (the agent service cannot cancel it); nobody else's.
   * Once per request; the notice after the ack.
   */
  private async stop(
    thread: ThreadKey,
    target: ReplyTarget,
    userId: string,
    request: MessageRef,
    agentSession: boolean,
    after: AfterAck[],
  ): Promise<void> {
    const { first, cancelled, stoppedRunning, othersGoOn } = await this.options.inbox.stop(
      threadKeyString(thread),
      userId,
      request,
    );
    if (!first) return;
    after.push(async () => {
      // Slack leaves the status to the app on a stop (docs: agent_session_stopped). With nothing left to do the
      // session is ready for the next message (the button goes); while someone else's message is still being
      // answered it stays `processing`, which that job ends itself (setting it here could land after that end).
      // Only a session the bot opened: setStatus would create one in a thread that never had one.
      if (agentSession && target.threadTs && !othersGoOn) {
        await this.options.agentViewConversations.features.update(
          { teamId: thread.teamId, channelId: target.channel, threadTs: target.threadTs },
          'active',
        );
      }
      // Cancelled messages were waiting, so each shows the "queued" indicator.
      for (const message of cancelled as InboundMessage[])
        await this.options.indicators.clearQueued(indicatorOf(message));
      await this.options.replies.notice(target, stoppedNotice(cancelled.length, stoppedRunning));
    });
  }

  /** Whether a thread reply without a mention belongs to a conversation the bot is part of. */
  private async isBotInThread(thread: ThreadKey, threadKey: string): Promise<boolean> {
    const session = await this.options.sessions.existing(thread, this.options.agentFor(thread.channelId));
    return session !== undefined || (await this.options.inbox.hasThread(threadKey));
  }

  /** A waiting message takes the new words; one already sent tells its author, once, that edits are not re-sent. */
  private async acceptEdit(edit: MessageEdit, after: AfterAck[]): Promise<void> {
    const agentView =
      edit.isDm && (await this.options.agentViewConversations.isAgentView(edit.teamId, edit.channel));
    const { thread, replyThreadTs } = placementOf(edit, agentView);
    const dedupeKey = jobKey(thread.teamId, thread.channelId, edit.ts, 'message');
    const replaced = await this.options.inbox.replaceWaitingPayload(dedupeKey, (payload) => ({
      ...(payload as InboundMessage),
      text: edit.text,
    }));
    if (replaced || !(await this.options.inbox.wasSent(dedupeKey))) return;
    const ref = { teamId: edit.teamId, channelId: edit.channel, ts: edit.ts };
    if (!(await this.options.claims.claim(ref, 'edit-notice'))) return;
    after.push(() =>
      this.options.replies.ephemeral(
        { channel: edit.channel, threadTs: replyThreadTs },
        edit.user,
        EDIT_NOT_RESENT_NOTICE,
      ),
    );
  }

  /** A message deleted while it still waited is not sent; its author is told so, privately. */
  private async acceptDeletion(deletion: MessageDeletion, after: AfterAck[]): Promise<void> {
    const dedupeKey = jobKey(deletion.teamId, deletion.channel, deletion.ts, 'message');
    const cancelled = (await this.options.inbox.cancelWaitingMessage(dedupeKey)) as
      | InboundMessage
      | undefined;
    if (!cancelled) {
      this.ignore('message', 'deleted-not-waiting');
      return;
    }
    // Its "queued" reaction went with the message; a later delivery of this event finds nothing to cancel.
    after.push(() =>
      this.options.replies.ephemeral(
        { channel: deletion.channel, threadTs: cancelled.replyThreadTs },
        cancelled.userId,
        DELETED_BEFORE_SENT_NOTICE,
      ),
    );
  }
}
