import type { ThreadKey } from '../sessions/thread-key.js';
import type { IndicatorTarget } from '../slack-out/indicators.js';

/** A human message for the agent, as recorded in the inbox. */
export interface InboundMessage {
  thread: ThreadKey;
  /** The message's own `ts`. */
  ts: string;
  userId: string;
  /** Slack's wire text (mentions, links and entities still encoded). */
  text: string;
  /** Where replies go: a thread, or undefined for the top level of a DM conversation. */
  replyThreadTs?: string;
  hasFiles: boolean;
  eventId?: string;
  /** A DM thread of the agent view (the Messages tab): the person's viewed channel goes with the prompt. */
  agentViewDm?: boolean;
  /** Shown as an agent-view session (status, stop button, title) rather than with reactions. */
  agentView?: boolean;
  /** Sent again by its author after its answer was lost: `text` is read back from Slack (none is kept). */
  resend?: boolean;
  /** The trace of the Slack request that recorded it (W3C traceparent), so the job's span joins it. */
  traceparent?: string;
}

/** A thread reset, run in turn with the thread's messages so no answer in progress revives the session. */
export interface ResetRequest {
  thread: ThreadKey;
  /** The request's own message (a `reset` mention): its notice in the thread is looked for from there. */
  ts?: string;
  replyThreadTs?: string;
  /** Where to report: the thread (a `reset` mention) or the requester privately (the shortcut). */
  responseUrl?: string;
  /** Reported by whoever asked (the slash command, for several conversations at once): nothing is posted. */
  silent?: boolean;
  /** The thread is an agent-view session, to be closed with the conversation. */
  agentView?: boolean;
  /** The trace of the Slack request that asked for it. */
  traceparent?: string;
}

/** The inbox identity of a Slack message's job: a second delivery of the message finds the first. */
export function jobKey(teamId: string, channelId: string, ts: string, kind: 'message' | 'reset'): string {
  return `${teamId}:${channelId}:${ts}:${kind}`;
}

/** The message an indicator (reaction or thread status) belongs to. */
export function indicatorOf(message: InboundMessage): IndicatorTarget {
  return {
    channelId: message.thread.channelId,
    ts: message.ts,
    replyThreadTs: message.replyThreadTs,
    agentView:
      (message.agentView ?? message.agentViewDm)
        ? { teamId: message.thread.teamId, initiator: message.userId }
        : undefined,
  };
}

/** The names the agent-view fields had in payloads recorded by earlier versions (still queued at an upgrade). */
interface EarlierAgentViewFields {
  agentThread?: boolean;
  agentSession?: boolean;
}

/** A recorded message job's payload, whichever version recorded it. */
export function inboundMessageOf(payload: unknown): InboundMessage {
  const { agentThread, agentSession, ...message } = payload as InboundMessage & EarlierAgentViewFields;
  const agentViewDm = message.agentViewDm ?? agentThread;
  const agentView = message.agentView ?? agentSession;
  return {
    ...message,
    ...(agentViewDm !== undefined ? { agentViewDm } : {}),
    ...(agentView !== undefined ? { agentView } : {}),
  };
}

/** A recorded reset job's payload, whichever version recorded it. */
export function resetRequestOf(payload: unknown): ResetRequest {
  const { agentSession, ...request } = payload as ResetRequest & EarlierAgentViewFields;
  const agentView = request.agentView ?? agentSession;
  return { ...request, ...(agentView !== undefined ? { agentView } : {}) };
}
