import type { types } from '@slack/bolt';
import type { Config } from '../config.js';
import type { MessageClaims } from '../conversation/message-claims.js';
import { EDIT_NOT_RESENT_NOTICE, queueFullNotice } from '../conversation/notices.js';
import type { InboundMessage, Relay, ResetRequest } from '../conversation/relay.js';
import type { Logger } from '../observability/logger.js';
import type { BotMetrics } from '../observability/metrics.js';
import type { SessionManager } from '../sessions/session-manager.js';
import { SessionStore } from '../sessions/session-store.js';
import { type ThreadKey, threadKeyString } from '../sessions/thread-key.js';
import { type AccessPolicy, rateLimitedText, refusalText } from '../slack/access-policy.js';
import type { AgentViewConversations } from '../slack/agent-view.js';
import {
  controlWordOf,
  type EventEnvelope,
  editOf,
  fromMention,
  fromMessage,
  type HumanMessage,
  placementOf,
} from '../slack/inbound-events.js';
import type { Inbox } from './inbox.js';
import type { Worker } from './worker.js';

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
] as const;

export type HandledEvent = (typeof HANDLED_EVENTS)[number];

type AgentViewConfig = Config['agentView'];

type EventHandler = (envelope: EventEnvelope, after: AfterAck[]) => Promise<void>;

/** Bounds one thread's backlog; far beyond what a person types while waiting for one answer. */
export const MAX_OPEN_PER_THREAD = 20;

export interface IntakeDependencies {
  inbox: Inbox;
  sessions: SessionManager;
  claims: MessageClaims;
  relay: Relay;
  agentFor: (channelId: string) => string;
  botUserId: string;
  /** Thread replies reach the agent only when they mention the bot. */
  mentionOnly: boolean;
  /** Slack's agent experience: its greeting and prompts. */
  agentView: AgentViewConfig;
  /** Which DMs are Messages-tab conversations (a thread and session per conversation). */
  agentViewConversations: AgentViewConversations;
  /** Runs recorded work: the intake claims a job for it directly when it has room. */
  worker: Pick<Worker, 'kickThread' | 'hasRoom' | 'adopt'>;
  access: AccessPolicy;
  /** Prompts per user per minute; 0: no limit. */
  userRateLimit: number;
  metrics: BotMetrics;
  logger: Logger;
}

/** Side effects for after the durable write (reactions, notices): best effort, never blocking the ack. */
type AfterAck = () => Promise<void>;

export function messageDedupeKey(
  teamId: string,
  channelId: string,
  ts: string,
  kind: 'message' | 'reset',
): string {
  return `${teamId}:${channelId}:${ts}:${kind}`;
}

/**
 * What happens to a Slack event before Slack is told it arrived: everything the bot must not lose is
 * written to the store (a job in the inbox, a session to retire). If that fails the event is not
 * acknowledged, so Slack delivers it again. Retries and double deliveries find their job already recorded.
 */
export class Intake {
  constructor(private readonly deps: IntakeDependencies) {}

  async accept(envelope: EventEnvelope): Promise<void> {
    const after: AfterAck[] = [];
    this.deps.metrics.eventsReceived.inc({ type: envelope.event.type });
    if (
      this.deps.access.check({ teamId: envelope.team_id, channelId: '', userId: '' }) === 'team-not-allowed'
    ) {
      this.ignore(envelope.event.type, 'team-not-allowed');
      return;
    }
    await this.record(envelope, after);
    for (const effect of after) {
      effect().catch((error: unknown) =>
        this.deps.logger.warn({ err: error }, 'could not show a notice or indicator'),
      );
    }
  }

  private async record(envelope: EventEnvelope, after: AfterAck[]): Promise<void> {
    const handler = this.handlers[envelope.event.type as HandledEvent] as EventHandler | undefined;
    if (handler) await handler(envelope, after);
    else this.ignore(envelope.event.type, 'not-handled');
  }

  /** One entry per Events API event the bot acts on; HANDLED_EVENTS (and the manifest test) derive from it. */
  private readonly handlers: Record<HandledEvent, EventHandler> = {
    app_mention: async ({ event, team_id: teamId, event_id: eventId }, after) => {
      const message = fromMention(event as unknown as types.AppMentionEvent, teamId, this.deps.botUserId);
      // In a 1:1 DM every message also arrives as `message`; that path owns it.
      if (!message || message.isDm) {
        this.ignore(event.type, message ? 'dm-duplicate' : 'not-from-a-person');
        return;
      }
      await this.acceptMessage({ ...message, eventId }, false, after);
    },
    message: async ({ event, team_id: teamId, event_id: eventId }, after) => {
      const messageEvent = event as unknown as types.AllMessageEvents;
      const edit = editOf(messageEvent, teamId, this.deps.botUserId);
      if (edit) {
        await this.acceptEdit(edit, after);
        return;
      }
      const message = fromMessage(messageEvent, teamId, this.deps.botUserId);
      if (!message) {
        this.ignore(event.type, 'not-from-a-person');
        return;
      }
      if (message.isDm) {
        await this.acceptMessage({ ...message, eventId }, false, after);
        return;
      }
      // Channels and group DMs: replies in a thread the bot is part of, without a mention
      // (a mention also arrives as app_mention and is taken from there).
      const inThread = message.threadTs !== undefined && message.threadTs !== message.ts;
      if (!inThread) this.ignore(event.type, 'not-in-a-thread');
      else if (message.mentionsBot) this.ignore(event.type, 'taken-as-mention');
      else if (this.deps.mentionOnly) this.ignore(event.type, 'mention-only');
      else await this.acceptMessage({ ...message, eventId }, true, after);
    },
    channel_archive: (envelope) => this.channelGone(envelope),
    group_archive: (envelope) => this.channelGone(envelope),
    channel_deleted: (envelope) => this.channelGone(envelope),
    group_deleted: (envelope) => this.channelGone(envelope),
    app_uninstalled: (envelope) => this.workspaceGone(envelope),
    // The agent experience: the Messages tab was opened; greet and suggest prompts after the ack.
    app_home_opened: async ({ event, team_id: teamId }, after) => {
      const channel = typeof event.channel === 'string' ? event.channel : undefined;
      const userId = typeof event.user === 'string' ? event.user : '';
      if (this.deps.agentViewConversations.mode === 'off' || event.tab !== 'messages' || !channel) {
        this.ignore(event.type, 'not-the-messages-tab');
        return;
      }
      const decision = this.deps.access.check({ teamId, channelId: channel, userId });
      if (decision !== 'allowed') {
        this.ignore(event.type, decision);
        return;
      }
      await this.deps.agentViewConversations.markOpened(teamId, channel);
      const ref = { teamId, channelId: channel, ts: 'welcome' };
      const firstTime = await this.deps.claims.claim(ref, 'greeting');
      const { greeting, suggestedPrompts } = this.deps.agentView;
      after.push(async () => {
        const greeted = await this.deps.relay.welcome(channel, greeting, suggestedPrompts, firstTime);
        // A greeting that could not be posted is not used up: the next opening tries again.
        if (firstTime && !greeted) await this.deps.claims.release(ref, 'greeting');
      });
    },
    // Stop pressed in Slack's UI on a Messages-tab conversation: the same as mentioning `stop` there.
    agent_session_stopped: async ({ event, team_id: teamId, event_id: eventId }, after) => {
      const channel = typeof event.channel === 'string' ? event.channel : undefined;
      const threadTs = typeof event.thread_ts === 'string' ? event.thread_ts : undefined;
      if (!channel || !threadTs) {
        this.ignore(event.type, 'no-thread');
        return;
      }
      const thread: ThreadKey = { teamId, channelId: channel, threadTs };
      const threadKey = threadKeyString(thread);
      // Cancelling is idempotent, so it runs before the claim: a retry after a failure here still cancels.
      const cancelled = (await this.deps.inbox.cancelWaiting(threadKey)) as InboundMessage[];
      const answering = await this.deps.inbox.isRunning(threadKey);
      // One notice per press; a Slack retry of the same event finds the claim.
      const ref = { teamId, channelId: channel, ts: `stop:${eventId}` };
      if (!(await this.deps.claims.claim(ref, 'control'))) return;
      after.push(() => this.deps.relay.reportStop(thread, threadTs, cancelled, answering));
    },
    tokens_revoked: async (envelope) => {
      // Revoking only user tokens leaves the bot working; only a revoked bot token ends the workspace.
      const tokens = envelope.event.tokens as { bot?: unknown[] } | undefined;
      if ((tokens?.bot?.length ?? 0) > 0) await this.workspaceGone(envelope);
      else this.ignore(envelope.event.type, 'user-tokens-only');
    },
  };

  private async channelGone({ event, team_id: teamId }: EventEnvelope): Promise<void> {
    const channelId = String(event.channel);
    const count = await this.deps.sessions.retireWhere({ teamId, channelId }, 'channel-gone');
    await this.deps.inbox.cancelOpenWithPrefix(`${teamId}:${channelId}:`);
    this.deps.logger.info(
      { team: teamId, channel: channelId, event: event.type, count },
      'channel closed; its agent sessions are being deleted',
    );
  }

  private async workspaceGone({ event, team_id: teamId }: EventEnvelope): Promise<void> {
    const count = await this.deps.sessions.retireWhere({ teamId }, 'workspace-gone');
    await this.deps.inbox.cancelOpenWithPrefix(`${teamId}:`);
    this.deps.logger.info(
      { team: teamId, event: event.type, count },
      'app removed from the workspace; its agent sessions are being deleted',
    );
  }

  private ignore(type: string, reason: string): void {
    this.deps.metrics.eventsIgnored.inc({ type, reason });
  }

  private async acceptMessage(message: HumanMessage, followUp: boolean, after: AfterAck[]): Promise<void> {
    const { inbox, relay } = this.deps;
    const agentView =
      message.isDm && (await this.deps.agentViewConversations.isAgentView(message.teamId, message.channel));
    const { thread, replyThreadTs } = placementOf(message, agentView);
    const threadKey = threadKeyString(thread);
    const eventType = followUp || message.isDm ? 'message' : 'app_mention';
    const ref = { teamId: message.teamId, channelId: message.channel, ts: message.ts };

    if (followUp && !(await this.isBotInThread(thread, threadKey))) {
      this.ignore(eventType, 'not-in-a-bot-thread');
      return;
    }
    const decision = this.deps.access.check({
      teamId: message.teamId,
      channelId: message.channel,
      userId: message.user,
    });
    if (decision !== 'allowed') {
      this.ignore(eventType, decision);
      if (decision !== 'team-not-allowed' && (await this.deps.claims.claim(ref, 'refusal'))) {
        after.push(() =>
          relay.tellUserDirectly(message.channel, message.user, replyThreadTs, refusalText(decision)),
        );
      }
      return;
    }

    // Control words count only when addressed to the bot (a mention, or a 1:1 DM), and once per message.
    const command =
      message.isDm || message.mentionsBot ? controlWordOf(message.text, this.deps.botUserId) : undefined;
    if (command) {
      if (!(await this.deps.claims.claim(ref, 'control'))) return;
      if (command === 'stop') {
        const cancelled = (await inbox.cancelWaiting(threadKey)) as InboundMessage[];
        const answering = await inbox.isRunning(threadKey);
        after.push(() => relay.reportStop(thread, replyThreadTs, cancelled, answering));
      } else {
        await this.enqueueReset({ thread, replyThreadTs }, message.ts);
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
    };
    const limit = this.deps.userRateLimit;
    const { outcome, queued, claimed } = await inbox.admit(
      {
        threadKey,
        dedupeKey: messageDedupeKey(thread.teamId, thread.channelId, message.ts, 'message'),
        kind: 'message',
        payload: inbound,
        userId: message.user,
      },
      { maxOpenPerThread: MAX_OPEN_PER_THREAD, userPerMinute: limit },
      this.deps.worker.hasRoom(),
      SessionStore.rowKey(thread, this.deps.agentFor(thread.channelId)),
    );
    if (outcome === 'duplicate') {
      this.deps.metrics.eventsDeduplicated.inc({ type: eventType });
      this.deps.logger.debug({ eventId: message.eventId, ts: message.ts }, 'duplicate delivery ignored');
      return;
    }
    if (outcome === 'rate-limited' || outcome === 'thread-full') {
      this.ignore(eventType, outcome);
      const text = outcome === 'rate-limited' ? rateLimitedText(limit) : queueFullNotice(MAX_OPEN_PER_THREAD);
      if (await this.deps.claims.claim(ref, 'refusal')) {
        after.push(() => relay.tellUserDirectly(message.channel, message.user, replyThreadTs, text));
      }
      return;
    }
    if (queued) after.push(() => relay.showQueued(inbound));
    // Claimed while recording (its thread was free): run it now. Queued behind its thread's work, it is
    // claimed when that work finishes; otherwise (no room when recorded) it is tried again now.
    if (claimed) this.deps.worker.adopt(claimed);
    else if (!queued) this.deps.worker.kickThread(threadKey);
  }

  /** Records a thread reset behind the thread's current work, cancelling what still waits. */
  async enqueueReset(request: ResetRequest, requestTs: string): Promise<void> {
    const threadKey = threadKeyString(request.thread);
    await this.deps.inbox.cancelWaiting(threadKey);
    await this.deps.inbox.enqueue({
      threadKey,
      dedupeKey: messageDedupeKey(request.thread.teamId, request.thread.channelId, requestTs, 'reset'),
      kind: 'reset',
      payload: request,
    });
    this.deps.worker.kickThread(threadKey);
  }

  /** Whether a thread reply without a mention belongs to a conversation the bot is part of. */
  private async isBotInThread(thread: ThreadKey, threadKey: string): Promise<boolean> {
    const session = await this.deps.sessions.existing(thread, this.deps.agentFor(thread.channelId));
    return session !== undefined || (await this.deps.inbox.hasThread(threadKey));
  }

  /** A waiting message takes the new words; one already sent tells its author, once, that edits are not re-sent. */
  private async acceptEdit(edit: NonNullable<ReturnType<typeof editOf>>, after: AfterAck[]): Promise<void> {
    const agentView =
      edit.isDm && (await this.deps.agentViewConversations.isAgentView(edit.teamId, edit.channel));
    const { thread, replyThreadTs } = placementOf(edit, agentView);
    const dedupeKey = messageDedupeKey(thread.teamId, thread.channelId, edit.ts, 'message');
    const waiting = (await this.deps.inbox.payloadOf(dedupeKey)) as InboundMessage | undefined;
    if (
      waiting?.thread &&
      (await this.deps.inbox.replaceWaitingPayload(dedupeKey, { ...waiting, text: edit.text }))
    )
      return;
    if (!(await this.deps.inbox.wasSent(dedupeKey))) return;
    const ref = { teamId: edit.teamId, channelId: edit.channel, ts: edit.ts };
    if (!(await this.deps.claims.claim(ref, 'edit-notice'))) return;
    after.push(() =>
      this.deps.relay.tellUserDirectly(edit.channel, edit.user, replyThreadTs, EDIT_NOT_RESENT_NOTICE),
    );
  }
}
