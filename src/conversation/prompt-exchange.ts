import { isAgentServiceError } from '../agent/errors.js';
import { botUserIdHere } from '../installations/workspace-scope.js';
import type { Logger } from '../observability/logger.js';
import { isDmChannel, isThreadReply } from '../sessions/conversation-of.js';
import { activityRowKey, type ThreadSession } from '../sessions/store.js';
import type { Working } from '../slack-out/indicators.js';
import type { JobContext } from './job-context.js';
import { type ClaimedJob, JobInterruptedError } from './job-progress.js';
import type { InboundMessage } from './jobs.js';
import { SESSION_RESTARTED_NOTICE } from './notices.js';
import { titleFromPrompt } from './prompt.js';
import { withThreadContext } from './thread-context.js';

/**
 * The agent's answer, and the session it came from (`created`: made for this message). `active`: the thread's
 * activity was recorded with "sent" (a session made for the message has its activity from its creation).
 */
export interface Answer {
  reply: string;
  session: ThreadSession;
  created: boolean;
  active: boolean;
}

/**
 * One exchange with the agent: the prompt, with what the agent must know besides (the thread so far, the
 * channel the person is looking at), sent once in the thread's session. The answer is the caller's to post.
 */
export class PromptExchange {
  constructor(private readonly context: JobContext) {}

  /** Sends the prompt in the thread's session (created or replaced as needed); "sent" is recorded before. */
  async ask(
    job: ClaimedJob,
    message: InboundMessage,
    prompt: string,
    working: Working,
    logger: Logger,
  ): Promise<Answer> {
    const { progress, sessions, agent } = this.context.options;
    const agentId = this.context.options.agentFor(message.thread);
    const found = await sessions.sessionFor(message.thread, agentId, message.userId);
    let { session } = found;
    let created = found.created;
    this.context.options.tracing.annotate({ 'agent.id': agentId, 'agent.session': session.sessionId });
    // A new conversation (the thread's first, or the first after a reset) is named after its first prompt.
    if (found.created) working.setTitle(titleFromPrompt(prompt));
    let sent = prompt;
    // Only the bot's first conversation in a thread: after a reset the thread's history is what was reset.
    if (found.created && this.startsMidThread(message) && !(await progress.hasEarlierWork(job))) {
      const earlier = await this.context.options.reads.threadMessagesBefore(
        message.thread.channelId,
        message.thread.threadTs,
        message.ts,
        this.context.options.threadContextMessages,
      );
      sent = await withThreadContext(prompt, earlier, {
        botUserId: botUserIdHere(this.context.options.botUserId),
        resolveUserName: this.context.options.resolveUserName,
        maxChars: this.context.options.maxPromptChars,
      });
    }
    if (message.agentViewDm) sent = await this.withViewedChannel(message, sent);
    let active = await this.markSent(job, session, created);
    let reply: string;
    try {
      reply = (await agent.sendMessage(agentId, session.sessionId, sent)).text;
    } catch (error) {
      // The service says the session does not exist, so it did not run the prompt: once, in a new session.
      if (!isAgentServiceError(error) || error.kind !== 'session_not_found') throw error;
      // Unless the conversation ended meanwhile (a reset, a closed channel, an uninstall deleted the session).
      await progress.markUnsent(job);
      session = await sessions.replace(session);
      created = true;
      active = await this.markSent(job, session, created);
      // Posted while the agent answers; the answer waits for it, as Slack shows posts in the order they land
      // (a notice held back by a rate limit would otherwise come after the answer it explains).
      const noticePosted = this.context.options.replies.notice(
        { channel: message.thread.channelId, threadTs: message.replyThreadTs },
        SESSION_RESTARTED_NOTICE,
      );
      reply = (await agent.sendMessage(agentId, session.sessionId, sent)).text;
      await noticePosted;
    }
    logger.debug({ session: session.sessionId, chars: reply.length }, 'agent replied');
    return { reply, session, created, active };
  }

  /**
   * Records that the prompt goes to `session`, with the thread's activity unless the session is new (see
   * Answer); a session made for a job cancelled meanwhile is retired.
   */
  private async markSent(job: ClaimedJob, session: ThreadSession, created: boolean): Promise<boolean> {
    const { progress, sessions } = this.context.options;
    const activityKey = created ? undefined : activityRowKey(session);
    return progress.markSent(job, session.sessionId, activityKey).catch(async (error: unknown) => {
      // The conversation ended while its session was being made (its channel closed, the app uninstalled):
      // the clean-up listed the conversations before this one existed, so the unused session goes here.
      if (created && error instanceof JobInterruptedError && error.reason === 'cancelled')
        await sessions.retire([session], 'unused');
      throw error;
    });
  }

  /** A mention that starts the bot's part in a channel thread people were already talking in. */
  private startsMidThread(message: InboundMessage): boolean {
    return (
      this.context.options.threadContextMessages > 0 &&
      !isDmChannel(message.thread.channelId) &&
      isThreadReply({ ts: message.ts, threadTs: message.replyThreadTs })
    );
  }

  /** The channel the person is looking at, on its own line, when it changed since the agent was last told. */
  private async withViewedChannel(message: InboundMessage, prompt: string): Promise<string> {
    const viewed = await this.context.options.viewing.takeChange({
      teamId: message.thread.teamId,
      dmChannel: message.thread.channelId,
      userId: message.userId,
    });
    // Only a channel the bot itself can see: its name must not leak from a conversation the bot is not in.
    const name = viewed ? await this.context.options.reads.visibleChannelName(viewed) : undefined;
    return name
      ? `[The person is looking at the Slack channel #${name} while writing this.]\n\n${prompt}`
      : prompt;
  }
}
