import type { AgentFeatures } from '../slack-out/agent-features.js';
import { DM_MAIN_THREAD, type ThreadKey } from './thread-key.js';

/**
 * THE answer to "where does this message belong": its workspace and channel, whether that is a 1:1 DM, its
 * conversation (thread), where the bot's replies go, and whether it is an agent-view conversation. Events,
 * commands, shortcuts, buttons, the idle sweeper and the relay all ask here; nothing re-derives it. Pure.
 */

/** A Slack message's position, as every payload that names a message gives it. */
export interface MessagePosition {
  teamId: string;
  /** The workspace's org (Enterprise Grid), when the payload names one. */
  enterpriseId?: string;
  channelId: string;
  /** The message's own ts. */
  ts: string;
  /** Slack's `thread_ts`: the root of the thread the message is in, or its own ts when it is a root with replies. */
  threadTs?: string;
}

/** How the workspace shows the bot (Slack's agent view), as far as placement goes. */
export interface AgentViewState {
  /** DMs are agent-view conversations (the Messages tab): each top-level message starts its own thread. */
  inDms: boolean;
  /** Channel threads are shown as agent-view sessions (status, stop button, title) rather than reactions. */
  inChannels: boolean;
}

export interface Conversation {
  teamId: string;
  channelId: string;
  /** A 1:1 DM with the bot (group DMs are channels here: they need a mention, like channels). */
  isDm: boolean;
  /** The conversation: the unit that owns one agent session. */
  thread: ThreadKey;
  /** Where the bot replies: a thread's root ts, or undefined for the top level of a classic DM. */
  replyThreadTs?: string;
  /** A DM thread of the agent view (the Messages tab): the person's viewed channel goes with each prompt. */
  agentViewDm: boolean;
  /** Shown as an agent-view session (status, stop button, title) rather than with reactions. */
  agentView: boolean;
}

/** A message's conversation, and whether the message is a reply in a thread (not top level, not a root). */
export interface MessageConversation extends Conversation {
  isReply: boolean;
}

/**
 * Whether a channel is a 1:1 DM. The channel id is the one authority: Slack's DM (`im`) ids start with `D`,
 * and the id is on every payload the bot gets (events, slash commands, shortcuts, buttons, stored thread
 * keys), while `channel_type` is on message events only. Where both are present they agree (`im` ⇔ `D…`,
 * checked against recorded Slack payloads in test/sessions/conversation-of.test.ts), so `channel_type` is not read.
 */
export function isDmChannel(channelId: string): boolean {
  return channelId.startsWith('D');
}

/**
 * Where a message belongs. A classic DM's top-level messages share one continuing conversation answered at the
 * top level; everything else (channel messages, DM threads, and every DM message in the agent view, where each
 * conversation is a thread of the Messages tab) is its thread's.
 */
export function conversationOf(message: MessagePosition, agentView: AgentViewState): MessageConversation {
  const { teamId, enterpriseId, channelId } = message;
  const isReply = isThreadReply(message);
  const threadTs =
    isDmChannel(channelId) && !isReply && !agentView.inDms
      ? DM_MAIN_THREAD
      : (message.threadTs ?? message.ts);
  const thread: ThreadKey = { teamId, channelId, threadTs, ...(enterpriseId ? { enterpriseId } : {}) };
  return { ...conversationOfThread(thread, agentView), isReply };
}

/** A reply in a thread: not a top-level message, nor the root of a thread (whose thread_ts is its own ts). */
export function isThreadReply(message: Pick<MessagePosition, 'ts' | 'threadTs'>): boolean {
  return message.threadTs !== undefined && message.threadTs !== message.ts;
}

/** What Slack itself states about a thread, beyond the workspace's agent view. */
export interface ThreadFacts {
  /**
   * Slack treats the thread as an agent-view one (its stop button was pressed there, and Slack shows that
   * button nowhere else): it is one, whatever the bot last learned of the workspace.
   */
  slackShowsAgentView?: boolean;
}

/**
 * The conversation a known thread is (a stored session, a Send again button's job, a thread Slack names, the
 * thread a shortcut's message roots or is in).
 */
export function conversationOfThread(
  thread: ThreadKey,
  agentView: AgentViewState,
  facts: ThreadFacts = {},
): Conversation {
  const isDm = isDmChannel(thread.channelId);
  const replyThreadTs = isSlackThread(thread) ? thread.threadTs : undefined;
  const agentViewDm = isDm && agentView.inDms && replyThreadTs !== undefined;
  const conversation = {
    teamId: thread.teamId,
    channelId: thread.channelId,
    isDm,
    thread,
    replyThreadTs,
    agentViewDm,
    agentView: isDm ? agentViewDm : agentView.inChannels && replyThreadTs !== undefined,
  };
  return facts.slackShowsAgentView ? { ...conversation, agentView: true } : conversation;
}

/**
 * The agent view of a workspace. Decided from what Slack states, never from `app_home_opened` (Slack sends it
 * for the Messages tab to classic apps too): SLACK_AGENT_VIEW, and with `auto` Slack's own "not an agent app"
 * answer, remembered per workspace. With `on` the Messages tab stays on even after such an answer.
 */
export function agentViewIn(
  features: Pick<AgentFeatures, 'mode' | 'offersAgentView'>,
  teamId: string,
): AgentViewState {
  const slackOffersIt = features.offersAgentView(teamId);
  return {
    inDms: features.mode === 'auto' ? slackOffersIt : features.mode === 'on',
    inChannels: slackOffersIt,
  };
}

/**
 * Whether a conversation is a Slack thread, not a classic DM's main line: only a thread can be linked to, be
 * replied in, or have an agent-view session to close.
 */
export function isSlackThread(thread: ThreadKey): boolean {
  return thread.threadTs !== DM_MAIN_THREAD;
}
