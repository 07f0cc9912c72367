import { setMaxListeners } from 'node:events';
import type { AgentClient } from '../agent/client.js';
import { isAgentServiceError } from '../agent/errors.js';
import { type ClaimedJob, type Inbox, JobInterruptedError } from '../inbox/inbox.js';
import type { JobOutcome } from '../inbox/worker.js';
import type { Logger } from '../observability/logger.js';
import type { Tracing } from '../observability/tracing.js';
import type { SessionManager } from '../sessions/manager.js';
import type { ThreadSession } from '../sessions/store.js';
import type { ThreadKey } from '../sessions/thread-key.js';
import type { AgentFeatures } from '../slack-out/agent-features.js';
import { feedbackBlock, sendAgainBlocks } from '../slack-out/blocks.js';
import { SlackPostError } from '../slack-out/failures.js';
import { formatAgentReply, type SlackReplyPart } from '../slack-out/format.js';
import type { WorkIndicators, Working } from '../slack-out/indicators.js';
import type { SlackReads } from '../slack-out/reads.js';
import type { ReplyTarget } from '../slack-out/reply-target.js';
import type { UserNameResolver } from '../slack-out/user-names.js';
import type { SlackWrites } from '../slack-out/writes.js';
import { StoreError } from '../store/database.js';
import { type InboundMessage, indicatorOf, type ResetRequest } from './jobs.js';
import {
  ATTACHMENTS_NOT_FORWARDED,
  answerDroppedNotice,
  EMPTY_PROMPT_HELP,
  FILES_ONLY_NOTICE,
  failureKindOf,
  failureNotice,
  INTERRUPTED_AFTER_SEND_NOTICE,
  MESSAGE_LIMIT_NOTE,
  newReferenceId,
  ORIGINAL_GONE_NOTICE,
  promptTooLongNotice,
  SESSION_RESTARTED_NOTICE,
  slackRefusedNotice,
  threadResetText,
} from './notices.js';
import { promptFromSlackText, titleFromPrompt } from './prompt.js';
import { withThreadContext } from './thread-context.js';
import type { ViewingContext } from './viewing-context.js';

export interface RelayOptions {
  inbox: Inbox;
  /** The agent that answers in a channel. */
  agentFor: (channelId: string) => string;
  agent: AgentClient;
  sessions: SessionManager;
  indicators: WorkIndicators;
  replies: SlackWrites;
  reads: SlackReads;
  /** Agent sessions: a reset closes the thread's, if the bot opened one. */
  agentFeatures: AgentFeatures;
  resolveUserName: UserNameResolver;
  botUserId: string;
  maxPromptChars: number;
  /** How long one agent call may take: an earlier owner of a job may be waiting that long for its answer. */
  agentTimeoutMs: number;
  /** How long an answer Slack refuses is kept and retried. */
  replyRetryWindowMs: number;
  /** How long an answer the store cannot record is held in memory and retried. */
  storeRetryWindowMs: number;
  /** Feedback buttons under each answer. */
  feedbackButtons: boolean;
  /** Earlier thread messages sent with a first mention mid-thread (0: none). */
  threadContextMessages: number;
  viewing: ViewingContext;
  tracing: Pick<Tracing, 'inSpanFrom' | 'annotate'>;
  logger: Logger;
}

/** Beyond the agent's own timeout, how long a job taken over waits before it calls an answer lost. */
export const TAKEOVER_GRACE_MS = 5_000;
/** A job retaken this often for reasons other than Slack (say, a store that keeps failing) is given up. */
const MAX_ATTEMPTS = 25;
const SLACK_BACKOFF_MAX_MS = 60_000;
/** The job's part name of the notice saying Slack refused its output for too long. */
const GAVE_UP_PART = 'gave-up';
/** The job's part name of what it posted unrecorded: its notice, or the notice that its answer was dropped. */
const UNRECORDED_PART = 'unrecorded';

/** The agent's answer, and the session it came from (`fresh`: created for this message). */
interface Answer {
  reply: string;
  session: ThreadSession;
  fresh: boolean;
}

/** What a job posts as its output: the agent's answer, or a notice in its place. */
interface JobOutput {
  text: string;
  isNotice: boolean;
  /** The session that answered, named by the feedback buttons. */
  sessionId?: string;
  /** storeReply has just asked whether the job is still wanted. */
  wantedAsked?: boolean;
}

/** The store stayed unreachable for longer than STORE_RETRY_WINDOW: the job's output is not recorded. */
class OutputNotRecordedError extends Error {
  /** The output itself: not enumerable, so a logged error never carries it. */
  declare readonly text: string;

  constructor(
    text: string,
    readonly isNotice: boolean,
    options: { cause: unknown },
  ) {
    super('the store could not record the output', options);
    this.name = 'OutputNotRecordedError';
    Object.defineProperty(this, 'text', { value: text, enumerable: false });
  }
}

/**
 * Runs one inbox job: a message (prompt → agent → reply in the thread) or a thread reset. Progress is
 * checkpointed in the job, so a job taken over after a crash resumes where it stopped: the prompt is never
 * sent twice, and nothing recorded as posted or found in the thread is posted again. Before each Slack side
 * effect the job is checked to be still this process's and still wanted (its author may have stopped it).
 */
export class Relay {
  /** Set when shutdown stops waiting for the jobs still running: they must not act any more. */
  private abandoned = false;
  /** Ends the holding of answers the store cannot record, when shutdown stops waiting. */
  private readonly abandoning = new AbortController();

  constructor(private readonly options: RelayOptions) {
    // Every job holding an answer through a store outage waits on this one signal (up to WORKER_CONCURRENCY).
    setMaxListeners(0, this.abandoning.signal);
  }

  /**
   * The process is going away with jobs still running (the drain bound passed): from now on they post
   * nothing and record nothing more, and an agent call cut short by the closing connection is no fault of
   * the agent service. Each job stays as far as it got, for the next owner to take over.
   */
  abandonRunning(): void {
    this.abandoned = true;
    this.abandoning.abort();
  }

  readonly run = (job: ClaimedJob): Promise<JobOutcome> => {
    const payload = job.payload as Partial<InboundMessage & ResetRequest>;
    const attributes = {
      'job.id': job.id,
      'job.kind': job.kind,
      'job.attempt': job.attempts,
      ...(payload.thread
        ? {
            'slack.team': payload.thread.teamId,
            'slack.channel': payload.thread.channelId,
            'slack.thread': payload.thread.threadTs,
          }
        : {}),
    };
    // A child of the Slack request that recorded the job, whichever process runs it and however much later.
    return this.options.tracing.inSpanFrom(payload.traceparent, 'job', attributes, async () => {
      try {
        if (job.kind === 'reset') return await this.runReset(job, job.payload as ResetRequest);
        return await this.runMessage(job, job.payload as InboundMessage);
      } catch (error) {
        if (error instanceof JobInterruptedError)
          return error.reason === 'lost' ? { kind: 'lost' } : { kind: 'done' };
        throw error;
      }
    });
  };

  private async runMessage(job: ClaimedJob, message: InboundMessage): Promise<JobOutcome> {
    const { inbox, indicators } = this.options;
    const logger = this.jobLogger(job, message.thread, { eventId: message.eventId });
    const target: ReplyTarget = { channel: message.thread.channelId, threadTs: message.replyThreadTs };
    const indicator = indicatorOf(message);
    if (job.queued && job.attempts === 1) void indicators.clearQueued(indicator);
    const working = indicators.showWorking(indicator, {
      slowNoticeTs: job.slowNoticeTs,
      resumed: job.attempts > 1,
      onSlowNotice: (ts) => inbox.setSlowNotice(job, ts),
      stillWanted: () =>
        this.assertWanted(job).then(
          () => true,
          () => false,
        ),
    });
    // Only a job that is over (done, or stopped by its author) takes its indicators down. One deferred, taken
    // over, or that threw (a store error: it is retaken once its lease lapses) keeps them: the answer is coming.
    let over = false;
    try {
      const outcome = await this.answer(job, message, target, working, logger).catch((error: unknown) => {
        if (error instanceof OutputNotRecordedError)
          return this.outputNotRecorded(job, message, target, error, logger);
        if (!(error instanceof SlackPostError)) throw error;
        return this.slackFailed(job, target, error, logger);
      });
      over = outcome.kind === 'done';
      return outcome;
    } catch (error) {
      over = error instanceof JobInterruptedError && error.reason === 'stopped';
      throw error;
    } finally {
      await working.end(over ? 'clear' : 'leave');
    }
  }

  private async answer(
    job: ClaimedJob,
    recorded: InboundMessage,
    target: ReplyTarget,
    working: Working,
    logger: Logger,
  ): Promise<JobOutcome> {
    if (job.agentReply !== undefined) {
      await this.postOutput(job, recorded, target, { text: job.agentReply, isNotice: job.replyIsNotice });
      // An answer kept through a Slack outage or a takeover: the thread is active now, when it is read.
      if (!job.replyIsNotice) {
        const agentId = this.options.agentFor(recorded.thread.channelId);
        await this.touch({ ...recorded.thread, agentId }, logger);
      }
      return { kind: 'done' };
    }
    if (job.sentAt) return this.resumeAfterSend(job, recorded, target, logger);
    if (job.attempts > MAX_ATTEMPTS) {
      logger.error({ attempts: job.attempts }, 'job retried too often; giving up');
      await this.postNotice(job, target, 'failure', failureNotice('internal', newReferenceId()));
      return { kind: 'done' };
    }

    let message = recorded;
    if (recorded.resend) {
      const text = await this.options.reads.messageText(target.channel, recorded.ts, recorded.replyThreadTs);
      if (text === undefined) {
        await this.postNotice(job, target, 'gone', ORIGINAL_GONE_NOTICE);
        return { kind: 'done' };
      }
      message = { ...recorded, text };
    }
    // Checked on the raw text first: a huge message must cost nothing before it is refused.
    if (message.text.length > this.options.maxPromptChars * 4) {
      await this.postNotice(
        job,
        target,
        'too-long',
        promptTooLongNotice(message.text.length, this.options.maxPromptChars),
      );
      return { kind: 'done' };
    }
    const prompt = await promptFromSlackText(
      message.text,
      this.options.botUserId,
      this.options.resolveUserName,
    );
    if (prompt === '') {
      await this.postNotice(job, target, 'help', message.hasFiles ? FILES_ONLY_NOTICE : EMPTY_PROMPT_HELP);
      return { kind: 'done' };
    }
    if (prompt.length > this.options.maxPromptChars) {
      await this.postNotice(
        job,
        target,
        'too-long',
        promptTooLongNotice(prompt.length, this.options.maxPromptChars),
      );
      return { kind: 'done' };
    }
    if (message.hasFiles && job.attempts === 1) {
      void this.options.replies.ephemeral(target, message.userId, ATTACHMENTS_NOT_FORWARDED);
    }

    let answer: Answer;
    try {
      answer = await this.ask(job, message, prompt, working, logger);
    } catch (error) {
      if (error instanceof JobInterruptedError || !isAgentServiceError(error)) throw error;
      if (this.abandoned) throw new JobInterruptedError('lost');
      // Recorded first, so a post that fails now is retried with the same words (and reference).
      const referenceId = newReferenceId();
      const kind = failureKindOf(error);
      logger[kind === 'misconfigured' ? 'error' : 'warn'](
        { err: error, ref: referenceId, kind },
        'message could not be answered',
      );
      const notice = failureNotice(kind, referenceId);
      await this.record(job, notice, true);
      await this.postOutput(job, message, target, { text: notice, isNotice: true, wantedAsked: true });
      return { kind: 'done' };
    }
    const { reply, session, fresh } = answer;
    await this.postOutput(job, message, target, {
      text: reply,
      isNotice: false,
      sessionId: session.sessionId,
      wantedAsked: true,
    });
    // Off the answer's path: the reply is in the thread already. A session created for this message has its
    // activity from its creation, seconds ago.
    if (!fresh) await this.touch(session, logger);
    return { kind: 'done' };
  }

  /** Sends the prompt in the thread's session (created or replaced as needed) and records the answer. */
  private async ask(
    job: ClaimedJob,
    message: InboundMessage,
    prompt: string,
    working: Working,
    logger: Logger,
  ): Promise<Answer> {
    const { inbox, sessions, agent } = this.options;
    const agentId = this.options.agentFor(message.thread.channelId);
    const found = await sessions.sessionFor(message.thread, agentId, message.userId);
    let { session } = found;
    let fresh = found.created;
    this.options.tracing.annotate({ 'agent.id': agentId, 'agent.session': session.sessionId });
    // A new conversation (the thread's first, or the first after a reset) is named after its first prompt.
    if (found.created) working.setTitle(titleFromPrompt(prompt));
    let sent = prompt;
    // Only the bot's first conversation in a thread: after a reset the thread's history is what was reset.
    if (found.created && this.startsMidThread(message) && !(await this.options.inbox.hasEarlierWork(job))) {
      const earlier = await this.options.reads.threadMessagesBefore(
        message.thread.channelId,
        message.thread.threadTs,
        message.ts,
        this.options.threadContextMessages,
      );
      sent = await withThreadContext(prompt, earlier, {
        botUserId: this.options.botUserId,
        resolveUserName: this.options.resolveUserName,
        maxChars: this.options.maxPromptChars,
      });
    }
    if (message.agentThread) sent = await this.withViewedChannel(message, sent);
    await inbox.markSent(job, session.sessionId);
    let reply: string;
    try {
      reply = (await agent.sendMessage(agentId, session.sessionId, sent)).text;
    } catch (error) {
      // The service says the session does not exist, so it did not run the prompt: once, in a new session.
      if (!isAgentServiceError(error) || error.kind !== 'session_not_found') throw error;
      session = await sessions.replace(session);
      fresh = true;
      await inbox.markSent(job, session.sessionId);
      void this.options.replies.notice(
        { channel: message.thread.channelId, threadTs: message.replyThreadTs },
        SESSION_RESTARTED_NOTICE,
      );
      reply = (await agent.sendMessage(agentId, session.sessionId, sent)).text;
    }
    logger.debug({ session: session.sessionId, chars: reply.length }, 'agent replied');
    await this.record(job, reply, false);
    return { reply, session, fresh };
  }

  /**
   * Records the job's output, which exists only in this process until then: through a store outage (a
   * restart, a failover) it is held and retried for up to STORE_RETRY_WINDOW, even after the job's lease
   * lapsed (another replica that took the job over then waits for it, see resumeAfterSend).
   */
  private async record(job: ClaimedJob, text: string, isNotice: boolean): Promise<void> {
    try {
      await this.options.inbox.storeReply(job, text, isNotice, {
        forMs: this.options.storeRetryWindowMs,
        signal: this.abandoning.signal,
      });
    } catch (error) {
      if (!(error instanceof StoreError)) throw error;
      if (this.abandoned) throw new JobInterruptedError('lost');
      throw new OutputNotRecordedError(text, isNotice, { cause: error });
    }
  }

  /**
   * The store stayed unreachable for longer than STORE_RETRY_WINDOW. An answer is posted only once recorded
   * (that is how it is posted exactly once, by whichever replica), so it is dropped, and the thread is told
   * once, honestly; a notice is posted as it is. Either is marked as the job's, so whoever runs the job
   * when the store is back finds it and says nothing more. No ownership check is possible with the store
   * down: a post for this job by another process is looked for instead.
   */
  private async outputNotRecorded(
    job: ClaimedJob,
    message: InboundMessage,
    target: ReplyTarget,
    error: OutputNotRecordedError,
    logger: Logger,
  ): Promise<JobOutcome> {
    const referenceId = newReferenceId();
    logger.error(
      { err: error.cause, ref: referenceId, windowMs: this.options.storeRetryWindowMs },
      'the store could not record the output for longer than STORE_RETRY_WINDOW; it is dropped',
    );
    if ((await this.options.reads.postedJobParts(target, message.ts, job.dedupeKey)).size > 0)
      return { kind: 'done' };
    if (this.abandoned) throw new JobInterruptedError('lost');
    const text = error.isNotice
      ? error.text
      : answerDroppedNotice(this.options.storeRetryWindowMs, referenceId);
    const blocks = error.isNotice ? [] : sendAgainBlocks(text, job.dedupeKey);
    await this.options.replies.postJobMessage(
      target,
      { ...noticePart(text), blocks },
      { job: job.dedupeKey, part: UNRECORDED_PART },
    );
    return { kind: 'done' };
  }

  /** A mention that starts the bot's part in a channel thread people were already talking in. */
  private startsMidThread(message: InboundMessage): boolean {
    return (
      this.options.threadContextMessages > 0 &&
      !message.thread.channelId.startsWith('D') &&
      message.replyThreadTs !== undefined &&
      message.replyThreadTs !== message.ts
    );
  }

  /** The channel the person is looking at, on its own line, when it changed since the agent was last told. */
  private async withViewedChannel(message: InboundMessage, prompt: string): Promise<string> {
    const viewed = await this.options.viewing.takeChange({
      teamId: message.thread.teamId,
      dmChannel: message.thread.channelId,
      userId: message.userId,
    });
    // Only a channel the bot itself can see: its name must not leak from a conversation the bot is not in.
    const name = viewed ? await this.options.reads.visibleChannelName(viewed) : undefined;
    return name
      ? `[The person is looking at the Slack channel #${name} while writing this.]\n\n${prompt}`
      : prompt;
  }

  /**
   * The prompt was sent by an earlier owner, whose answer is not recorded. While that owner is heard from
   * and may still be waiting for it (the agent's timeout), wait too; once it is gone (a crash is known within
   * seconds of its lease lapsing) or its time is up, its answer is given up: look for it in Slack, and only
   * then call it lost.
   */
  private async resumeAfterSend(
    job: ClaimedJob,
    message: InboundMessage,
    target: ReplyTarget,
    logger: Logger,
  ): Promise<JobOutcome> {
    if (!job.answerLost) {
      // A sender still heard from may hold the agent's answer through a store outage (STORE_RETRY_WINDOW),
      // so it is waited for that long beyond the agent's own timeout; a silent one is judged at once.
      const deadline =
        (job.sentAt?.getTime() ?? 0) +
        this.options.agentTimeoutMs +
        this.options.storeRetryWindowMs +
        TAKEOVER_GRACE_MS;
      const verdict = await this.options.inbox.judgeSender(job, Date.now() >= deadline);
      if (verdict === undefined) {
        // The answer came in meanwhile (or the job is no longer this owner's: that interrupts here).
        await this.assertWanted(job);
        return { kind: 'defer', delayMs: 0, slackFailure: false };
      }
      if (!verdict.lost) {
        const delayMs = Math.max(0, Math.min(verdict.recheckInMs, deadline - Date.now()));
        return { kind: 'defer', delayMs, slackFailure: false };
      }
    }
    if ((await this.options.reads.postedJobParts(target, message.ts, job.dedupeKey)).size > 0)
      return { kind: 'done' };
    logger.warn({ session: job.sessionId }, 'prompt was sent before an interruption; its answer is lost');
    // Asking again is the author's choice (the prompt may be a command): one press of Send again.
    await this.postNotice(
      job,
      target,
      'lost',
      INTERRUPTED_AFTER_SEND_NOTICE,
      sendAgainBlocks(INTERRUPTED_AFTER_SEND_NOTICE, job.dedupeKey),
    );
    return { kind: 'done' };
  }

  /** Posts the job's output (the answer's parts, or a notice) once each, resuming after what was posted. */
  private async postOutput(
    job: ClaimedJob,
    message: InboundMessage,
    target: ReplyTarget,
    output: JobOutput,
  ): Promise<void> {
    const { inbox, replies, reads } = this.options;
    const { text, isNotice, sessionId = job.sessionId } = output;
    const parts: SlackReplyPart[] = isNotice ? [noticePart(text)] : formatAgentReply(text);
    const last = parts.at(-1);
    if (!isNotice && last && sessionId && this.options.feedbackButtons) {
      // Feedback under the whole answer, naming its agent and session so an operator can compare agents.
      last.blocks = [
        ...last.blocks,
        feedbackBlock({ agentId: this.options.agentFor(message.thread.channelId), sessionId }),
      ];
    }
    let next = job.partsPosted;
    let wantedAsked = output.wantedAsked === true;
    if (job.attempts > 1) {
      // A resumed job may have posted more than it recorded (a crash, or a post whose outcome was unknown).
      const found = await reads.postedJobParts(target, message.ts, job.dedupeKey);
      // An earlier run said Slack refused this output for too long (and then failed to record the job done).
      if (found.has(GAVE_UP_PART)) return;
      while (found.has(String(next))) next++;
      wantedAsked = false;
    }
    for (let index = next; index < parts.length; index++) {
      const part = parts[index];
      if (!part) continue;
      await this.assertWanted(job, wantedAsked);
      wantedAsked = false;
      await replies.postJobMessage(target, part, { job: job.dedupeKey, part: String(index) });
      if (index + 1 < parts.length) await inbox.markPartsPosted(job, index + 1);
    }
  }

  /**
   * Before each Slack side effect: the job is still this process's, and wanted. `justAsked`: the store was
   * asked that a moment ago (storing the answer asks it too).
   */
  private async assertWanted(job: ClaimedJob, justAsked = false): Promise<void> {
    if (this.abandoned) throw new JobInterruptedError('lost');
    if (!justAsked) await this.options.inbox.assertWanted(job);
  }

  /** A notice that is the job's whole output, posted once. */
  private async postNotice(
    job: ClaimedJob,
    target: ReplyTarget,
    name: string,
    text: string,
    blocks: SlackReplyPart['blocks'] = [],
  ): Promise<void> {
    const { replies, reads } = this.options;
    if (job.attempts > 1 && (await reads.postedJobParts(target, postsFrom(job), job.dedupeKey)).has(name)) {
      return;
    }
    await this.assertWanted(job);
    await replies.postJobMessage(target, { ...noticePart(text), blocks }, { job: job.dedupeKey, part: name });
  }

  /** Slack refused a post: keep the job and retry with backoff, for up to REPLY_RETRY_WINDOW. */
  private async slackFailed(
    job: ClaimedJob,
    target: ReplyTarget,
    error: SlackPostError,
    logger: Logger,
  ): Promise<JobOutcome> {
    if (error.code === 'message_limit_exceeded') {
      // A free workspace's message limit (chat.postMessage documents it): no retry helps before it resets.
      logger.error(
        { code: error.code },
        "Slack refused the answer: the workspace has reached its plan's message limit; the answer is dropped",
      );
      const author = (job.payload as Partial<InboundMessage>).userId;
      await this.assertWanted(job);
      if (author) await this.options.replies.ephemeral(target, author, MESSAGE_LIMIT_NOTE);
      return { kind: 'done' };
    }
    if (!error.transient) {
      logger.error({ err: error, code: error.code }, 'Slack will not take the answer to this message');
      return { kind: 'done' };
    }
    const failingFor = this.slackFailingFor(job);
    if (failingFor >= this.options.replyRetryWindowMs) {
      const referenceId = newReferenceId();
      logger.error(
        { err: error, ref: referenceId, failingForMs: failingFor },
        'Slack refused the answer for too long; giving up',
      );
      // The failed post may have taken long: the job may have been stopped or taken over meanwhile.
      await this.assertWanted(job);
      // Marked, so a run of the job after a failed finish sees it gave up already.
      await this.options.replies.notice(target, slackRefusedNotice(referenceId), {
        job: job.dedupeKey,
        part: GAVE_UP_PART,
      });
      return { kind: 'done' };
    }
    return this.retryLater(job, error, logger);
  }

  private slackFailingFor(job: ClaimedJob): number {
    return Date.now() - (job.slackFailingSince?.getTime() ?? Date.now());
  }

  /** Keeps the job, with what it is to post, for another try after a back-off (or Slack's Retry-After). */
  private retryLater(job: ClaimedJob, error: SlackPostError, logger: Logger): JobOutcome {
    const backoff = Math.min(SLACK_BACKOFF_MAX_MS, 1_000 * 2 ** Math.min(job.attempts - 1, 10));
    const delayMs = Math.max(error.retryAfterMs ?? 0, backoff / 2 + Math.random() * (backoff / 2));
    logger.warn(
      { code: error.code, retryInMs: Math.round(delayMs) },
      'Slack refused a post; the answer is kept and retried',
    );
    return { kind: 'defer', delayMs, slackFailure: true };
  }

  /**
   * Ends the thread's conversation. Like an answer, its words are recorded before anything is done, so a reset
   * run again (its end not recorded, or taken over) says what the first run found, and says it once.
   */
  private async runReset(job: ClaimedJob, request: ResetRequest): Promise<JobOutcome> {
    const { inbox, sessions, replies } = this.options;
    const thread = {
      teamId: request.thread.teamId,
      channelId: request.thread.channelId,
      threadTs: request.thread.threadTs,
    };
    // Listed again on a rerun: a crash may have come between recording the words and retiring the session.
    const ending = await sessions.list(thread);
    const recordedNow = job.agentReply === undefined && !request.silent;
    let text = job.agentReply;
    if (recordedNow) {
      text = threadResetText(ending.length);
      await inbox.storeReply(job, text, true);
    } else {
      await this.assertWanted(job);
    }
    await sessions.retire(ending, 'reset');
    // The conversation is over; the next message in the thread starts a new one (and a new session).
    await this.options.agentFeatures.close([request.thread]);
    if (text === undefined) return { kind: 'done' };
    if (request.responseUrl) {
      // A private answer cannot be looked up afterwards: only the run that recorded the words sends it (so
      // it may be missing after a crash right here, never doubled).
      if (recordedNow) {
        await this.assertWanted(job);
        await replies.respond(request.responseUrl, text);
      }
      return { kind: 'done' };
    }
    const target = { channel: request.thread.channelId, threadTs: request.replyThreadTs };
    try {
      await this.postNotice(job, target, 'reset', text);
    } catch (error) {
      if (!(error instanceof SlackPostError)) throw error;
      const logger = this.jobLogger(job, request.thread);
      // Refused for now: its words are recorded, so a later run posts them (once).
      if (error.transient && this.slackFailingFor(job) < this.options.replyRetryWindowMs)
        return this.retryLater(job, error, logger);
      // The reset itself is done; its notice is best effort.
      logger.warn({ err: error }, 'could not post the reset notice');
    }
    return { kind: 'done' };
  }

  private async touch(session: ThreadKey & { agentId: string }, logger: Logger): Promise<void> {
    await this.options.sessions.touch(session).catch((error: unknown) => {
      logger.warn({ err: error }, 'could not record thread activity');
    });
  }

  /** Every line logged about a job names it and its thread. */
  private jobLogger(job: ClaimedJob, thread: ThreadKey, extra: Record<string, unknown> = {}): Logger {
    return this.options.logger.child({
      job: job.id,
      ...extra,
      team: thread.teamId,
      channel: thread.channelId,
      thread: thread.threadTs,
    });
  }
}

/**
 * Where a job's own posts are looked for: from its Slack message on. A reset recorded before it kept its
 * message's ts is looked for from its thread's start (or, at the top level of a DM, among the latest).
 */
function postsFrom(job: ClaimedJob): string {
  const payload = job.payload as Partial<InboundMessage & ResetRequest>;
  return payload.ts ?? payload.replyThreadTs ?? '0';
}

function noticePart(text: string): SlackReplyPart {
  return { text, blocks: [], markdown: text };
}
