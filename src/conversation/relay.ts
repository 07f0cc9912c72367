import type { WebClient } from '@slack/web-api';
import type { AgentClient } from '../agent/client.js';
import { isAgentServiceError } from '../agent/errors.js';
import type { ClaimedJob, Inbox } from '../delivery/inbox.js';
import { type Logger, lazyChild, type ScopedLogger } from '../observability/logger.js';
import type { SessionManager } from '../sessions/session-manager.js';
import type { ThreadSession } from '../sessions/session-store.js';
import type { ThreadKey } from '../sessions/thread-key.js';
import { promptFromSlackText, type UserNameResolver } from '../slack/prompt-text.js';
import { formatAgentReply, plainText, type SlackReplyPart } from '../slack/reply-format.js';
import {
  ATTACHMENTS_NOT_FORWARDED,
  EMPTY_PROMPT_HELP,
  FILES_ONLY_NOTICE,
  failureKindOf,
  failureNotice,
  INTERRUPTED_AFTER_SEND_NOTICE,
  newReferenceId,
  nothingToStopNotice,
  promptTooLongNotice,
  SESSION_RESTARTED_NOTICE,
  stoppedNotice,
  threadResetText,
} from './notices.js';
import { type IndicatorTarget, slackError, type WorkIndicators } from './work-indicators.js';

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
  /** A conversation of the Messages tab (agent experience): status and title instead of reactions. */
  agentThread?: boolean;
}

/** A thread reset, run in turn with the thread's messages so no answer in progress revives it. */
export interface ResetRequest {
  thread: ThreadKey;
  replyThreadTs?: string;
  /** Where to report: the thread (a `reset` mention) or the requester privately (the shortcut). */
  responseUrl?: string;
}

export interface RelayDependencies {
  inbox: Inbox;
  /** The agent that answers in a channel. */
  agentFor: (channelId: string) => string;
  agent: AgentClient;
  sessions: SessionManager;
  indicators: WorkIndicators;
  slack: WebClient;
  botUserId: string;
  resolveUserName: UserNameResolver;
  maxPromptChars: number;
  logger: Logger;
}

const TITLE_MAX_CHARS = 60;

/** Slack message metadata marking a posted reply part, so a job finished by another owner never posts it twice. */
const REPLY_METADATA_EVENT = 'agent_reply';

/**
 * Runs inbox jobs: relays a message to the agent and its reply back to Slack, or resets a thread.
 * Progress is checkpointed in the job, so a job reclaimed after a crash resumes where it stopped:
 * the prompt is never sent twice and no reply part is posted twice.
 */
export class Relay {
  constructor(private readonly deps: RelayDependencies) {}

  /** Runs one job to its end (the worker records that it finished). */
  readonly run = async (job: ClaimedJob): Promise<void> => {
    if (job.kind === 'reset') await this.runReset(job, job.payload as ResetRequest);
    else await this.runMessage(job, job.payload as InboundMessage);
  };

  /** After ack: shows the "queued" indicator on a message recorded behind other work. */
  async showQueued(message: InboundMessage): Promise<void> {
    await this.deps.indicators.showQueued(targetOf(message));
  }

  /** After ack: clears the cancelled messages' indicators and says what `stop` did. */
  async reportStop(
    thread: ThreadKey,
    replyThreadTs: string | undefined,
    cancelled: InboundMessage[],
    answerInProgress: boolean,
  ): Promise<void> {
    // Cancelled jobs were waiting, so each shows the "queued" indicator.
    for (const message of cancelled) await this.deps.indicators.clearQueued(targetOf(message));
    const text =
      cancelled.length === 0 && !answerInProgress
        ? nothingToStopNotice()
        : stoppedNotice(cancelled.length, answerInProgress);
    await this.post(thread.channelId, replyThreadTs, text);
  }

  /** A note only one person sees, so the thread stays about the conversation. */
  async tellUserDirectly(
    channel: string,
    user: string,
    threadTs: string | undefined,
    text: string,
  ): Promise<void> {
    await this.deps.slack.chat.postEphemeral({ channel, user, thread_ts: threadTs, text });
  }

  private async runMessage(job: ClaimedJob, message: InboundMessage): Promise<void> {
    const { thread } = message;
    const logger = this.jobLogger(job, thread, { eventId: message.eventId });
    const target = targetOf(message);
    if (job.queued && job.attempts === 1) void this.deps.indicators.clearQueued(target);
    const clearWorking = this.deps.indicators.showWorking(target, {
      slowNoticeTs: job.slowNoticeTs,
      resumed: job.attempts > 1,
      onSlowNotice: (ts) => this.deps.inbox.setSlowNotice(job.id, ts),
    });
    let storing: Promise<void> | undefined;
    try {
      let reply = job.agentReply;
      let session: ThreadSession | undefined;
      if (reply === undefined) {
        if (job.sent) {
          // A previous owner sent the prompt and stopped before its answer was recorded: asking again would
          // run it twice. If the answer reached Slack anyway (its record was a checkpoint lost with the
          // database server), there is nothing to say.
          if ((await this.partsFoundInSlack(job, message, logger)).size > 0) return;
          logger.warn(
            { session: job.sessionId },
            'prompt was sent before an interruption; its answer is lost',
          );
          await this.post(thread.channelId, message.replyThreadTs, INTERRUPTED_AFTER_SEND_NOTICE);
          return;
        }
        const prompt = await promptFromSlackText(
          message.text,
          this.deps.botUserId,
          this.deps.resolveUserName,
        );
        if (prompt === '') {
          await this.post(
            thread.channelId,
            message.replyThreadTs,
            message.hasFiles ? FILES_ONLY_NOTICE : EMPTY_PROMPT_HELP,
          );
          return;
        }
        if (prompt.length > this.deps.maxPromptChars) {
          const notice = promptTooLongNotice(prompt.length, this.deps.maxPromptChars);
          await this.post(thread.channelId, message.replyThreadTs, notice);
          return;
        }
        if (message.hasFiles) void this.tellUser(message, ATTACHMENTS_NOT_FORWARDED, logger);
        // The first message of a Messages-tab conversation names it, once.
        if (message.agentThread && message.replyThreadTs === message.ts && job.attempts === 1)
          void this.setTitle(message, titleFromPrompt(prompt), logger);
        const agentId = this.deps.agentFor(thread.channelId);
        // A new thread's session mapping and the job's "sent" mark are written in one round trip.
        let markedSentFor: string | undefined;
        const markSent = async (created: ThreadSession) => {
          await this.deps.inbox.markSent(job.id, created.sessionId);
          markedSentFor = created.sessionId;
        };
        // Read along with recording the job when it was claimed at once; looked up otherwise.
        session =
          job.sessionRow !== undefined && job.attempts === 1
            ? await this.deps.sessions.sessionFromRow(
                job.sessionRow,
                thread,
                agentId,
                message.userId,
                markSent,
              )
            : await this.deps.sessions.sessionFor(thread, agentId, message.userId, markSent);
        const answer = await this.ask(job, message, session, prompt, logger, markedSentFor);
        reply = answer.reply;
        session = answer.usedSession;
        // Recorded while the reply is posted, not before: it only matters if this process stops before
        // the post lands, and a reply that cannot be recorded is still worth posting.
        storing = this.deps.inbox.storeReply(job.id, reply).catch((error: unknown) => {
          logger.warn({ err: error }, 'could not record the reply before posting it');
        });
        logger.debug({ session: session.sessionId, chars: reply.length }, 'agent replied');
      }
      await this.postReply(job, message, formatAgentReply(reply), logger);
      await storing;
      session ??= await this.deps.sessions.existing(thread, this.deps.agentFor(thread.channelId));
      if (session) {
        await this.deps.sessions.touch(session).catch((error: unknown) => {
          logger.warn({ err: error }, 'could not record thread activity');
        });
      }
    } catch (error) {
      await this.reportFailure(message, error, logger);
    } finally {
      // The job is finished only after its reply checkpoint has landed (or failed).
      await storing;
      await clearWorking().catch((error: unknown) =>
        logger.warn({ err: error }, 'could not clear indicator'),
      );
    }
  }

  private async runReset(job: ClaimedJob, request: ResetRequest): Promise<void> {
    const { thread } = request;
    const logger = this.jobLogger(job, thread);
    let count: number;
    try {
      count = await this.deps.sessions.retireWhere(
        { teamId: thread.teamId, channelId: thread.channelId, threadTs: thread.threadTs },
        'reset',
      );
    } catch (error) {
      logger.error({ err: error, ref: newReferenceId() }, 'could not reset the conversation');
      count = -1;
    }
    const text = threadResetText(count);
    try {
      if (request.responseUrl) await respondEphemeral(request.responseUrl, text);
      else await this.post(thread.channelId, request.replyThreadTs, text);
    } catch (error) {
      logger.warn({ err: error }, 'could not report the reset');
    }
  }

  /** Sends the prompt; a session the service lost is replaced once and the prompt sent again. */
  private async ask(
    job: ClaimedJob,
    message: InboundMessage,
    session: ThreadSession,
    prompt: string,
    logger: ScopedLogger,
    /** The session the job was already marked sent for, along with creating it. */
    markedSentFor?: string,
  ): Promise<{ reply: string; usedSession: ThreadSession }> {
    // Recorded before sending: whoever finishes this job after a crash must not send it again.
    if (markedSentFor !== session.sessionId) await this.deps.inbox.markSent(job.id, session.sessionId);
    try {
      const reply = await this.deps.agent.sendMessage(session.agentId, session.sessionId, prompt);
      return { reply: reply.text, usedSession: session };
    } catch (error) {
      if (!isAgentServiceError(error) || error.kind !== 'session_not_found') throw error;
      logger.warn({ session: session.sessionId }, 'agent session not found on the service');
      const replacement = await this.deps.sessions.replace(session);
      await this.post(message.thread.channelId, message.replyThreadTs, SESSION_RESTARTED_NOTICE);
      await this.deps.inbox.markSent(job.id, replacement.sessionId);
      const reply = await this.deps.agent.sendMessage(replacement.agentId, replacement.sessionId, prompt);
      return { reply: reply.text, usedSession: replacement };
    }
  }

  /** Posts the parts not posted yet, each marked with metadata and checkpointed as it lands. */
  private async postReply(
    job: ClaimedJob,
    message: InboundMessage,
    parts: SlackReplyPart[],
    logger: ScopedLogger,
  ): Promise<void> {
    const channel = message.thread.channelId;
    const threadTs = message.replyThreadTs;
    const resumed = job.attempts > 1 && job.partsPosted < parts.length;
    const alreadyInSlack = resumed ? await this.partsFoundInSlack(job, message, logger) : new Set<number>();
    for (let index = job.partsPosted; index < parts.length; index++) {
      const part = parts[index];
      if (!part) continue;
      if (!alreadyInSlack.has(index)) {
        const metadata = {
          event_type: REPLY_METADATA_EVENT,
          event_payload: { job: job.dedupeKey, part: index },
        };
        try {
          await this.deps.slack.chat.postMessage({
            channel,
            thread_ts: threadTs,
            text: part.text,
            blocks: part.blocks,
            metadata,
          });
        } catch (error) {
          const code = slackError(error);
          // A workspace or client that refuses the markdown block still gets the whole text, shown literally.
          if (code !== 'invalid_blocks' && code !== 'msg_blocks_too_long' && code !== 'invalid_blocks_format')
            throw error;
          await this.deps.slack.chat.postMessage({
            channel,
            thread_ts: threadTs,
            text: plainText(part.markdown),
            metadata,
          });
        }
      }
      // The last part needs no checkpoint: finishing the job records it (and a crash before that is
      // covered by the metadata check).
      if (index + 1 < parts.length) await this.deps.inbox.markPartsPosted(job.id, index + 1);
    }
  }

  /**
   * The reply parts of this job that are already in Slack: after a crash between posting a part and
   * recording it, the part is found by its metadata instead of being posted again.
   */
  private async partsFoundInSlack(
    job: ClaimedJob,
    message: InboundMessage,
    logger: ScopedLogger,
  ): Promise<Set<number>> {
    const found = new Set<number>();
    try {
      const channel = message.thread.channelId;
      const history = message.replyThreadTs
        ? await this.deps.slack.conversations.replies({
            channel,
            ts: message.replyThreadTs,
            include_all_metadata: true,
            limit: 200,
          })
        : await this.deps.slack.conversations.history({
            channel,
            oldest: message.ts,
            include_all_metadata: true,
            limit: 200,
          });
      for (const posted of history.messages ?? []) {
        const metadata = posted.metadata as
          | { event_type?: string; event_payload?: { job?: unknown; part?: unknown } }
          | undefined;
        if (metadata?.event_type === REPLY_METADATA_EVENT && metadata.event_payload?.job === job.dedupeKey) {
          const part = Number(metadata.event_payload.part);
          if (Number.isInteger(part)) found.add(part);
        }
      }
    } catch (error) {
      logger.warn({ err: error }, 'could not check which reply parts were posted before the interruption');
    }
    return found;
  }

  private async reportFailure(message: InboundMessage, error: unknown, logger: ScopedLogger): Promise<void> {
    const referenceId = newReferenceId();
    const kind = failureKindOf(error);
    logger[kind === 'internal' ? 'error' : 'warn'](
      { err: error, ref: referenceId, kind },
      'message could not be answered',
    );
    await this.post(message.thread.channelId, message.replyThreadTs, failureNotice(kind, referenceId)).catch(
      (postError: unknown) =>
        logger.error({ err: postError, ref: referenceId }, 'could not post the failure notice'),
    );
  }

  private async post(channel: string, threadTs: string | undefined, text: string): Promise<void> {
    await this.deps.slack.chat.postMessage({ channel, thread_ts: threadTs, text });
  }

  /** Every line logged about a job names it and its thread. */
  private jobLogger(job: ClaimedJob, thread: ThreadKey, extra: Record<string, unknown> = {}): ScopedLogger {
    return lazyChild(this.deps.logger, {
      job: job.id,
      ...extra,
      team: thread.teamId,
      channel: thread.channelId,
      thread: thread.threadTs,
    });
  }

  private async setTitle(message: InboundMessage, title: string, logger: ScopedLogger): Promise<void> {
    if (!message.replyThreadTs || title === '') return;
    await this.deps.slack.assistant.threads
      .setTitle({ channel_id: message.thread.channelId, thread_ts: message.replyThreadTs, title })
      .catch((error: unknown) => logger.warn({ err: error }, 'could not set the conversation title'));
  }

  /**
   * The Messages tab was opened (agent experience): its suggested prompts, headed by the greeting, and the
   * greeting as a message the first time only. Each is best effort on its own; returns whether the
   * greeting was posted (false when it was not due or failed).
   */
  async welcome(
    channelId: string,
    greeting: string,
    prompts: readonly { title: string; message: string }[],
    firstTime: boolean,
  ): Promise<boolean> {
    if (prompts.length > 0) {
      // No thread_ts: for an agent app the prompts belong to the tab (with one, Slack ignores the call).
      await this.deps.slack.assistant.threads
        .setSuggestedPrompts({ channel_id: channelId, title: greeting, prompts: [...prompts] })
        .catch((error: unknown) =>
          this.deps.logger.warn({ err: error }, 'could not set the suggested prompts'),
        );
    }
    if (!firstTime) return false;
    try {
      await this.post(channelId, undefined, greeting);
      return true;
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'could not post the greeting');
      return false;
    }
  }

  private async tellUser(message: InboundMessage, text: string, logger: ScopedLogger): Promise<void> {
    await this.tellUserDirectly(message.thread.channelId, message.userId, message.replyThreadTs, text).catch(
      (error: unknown) => logger.warn({ err: error }, 'could not post an ephemeral note'),
    );
  }
}

/** Answers a slash command or shortcut later, through its response_url (valid for 30 minutes). */
async function respondEphemeral(responseUrl: string, text: string): Promise<void> {
  const response = await fetch(responseUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ response_type: 'ephemeral', text }),
    signal: AbortSignal.timeout(10_000),
  });
  if (!response.ok) throw new Error(`response_url answered HTTP ${response.status}`);
}

export function targetOf(message: InboundMessage): IndicatorTarget {
  return {
    channelId: message.thread.channelId,
    ts: message.ts,
    replyThreadTs: message.replyThreadTs,
    agentThread: message.agentThread,
  };
}

/** A conversation title from its first prompt: one line, cut at a word near the limit. */
export function titleFromPrompt(prompt: string, maxChars = TITLE_MAX_CHARS): string {
  const line = prompt.replace(/\s+/g, ' ').trim();
  // By code points, so an emoji is never split in half.
  const chars = Array.from(line);
  if (chars.length <= maxChars) return line;
  const cut = chars.slice(0, maxChars - 1).join('');
  const atWord = cut.lastIndexOf(' ');
  return `${(atWord > maxChars / 2 ? cut.slice(0, atWord) : cut).trimEnd()}…`;
}
