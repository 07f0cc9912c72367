import { isAgentServiceError } from '../agent/errors.js';
import { botUserIdHere } from '../installations/workspace-scope.js';
import type { Logger } from '../observability/logger.js';
import { sendAgainBlocks } from '../slack-out/blocks.js';
import { SlackPostError } from '../slack-out/failures.js';
import type { Working } from '../slack-out/indicators.js';
import type { ReplyTarget } from '../slack-out/reply-target.js';
import { AnswerRecorder, OutputNotRecordedError } from './answer-record.js';
import type { JobContext } from './job-context.js';
import { type JobOutput, JobPosts } from './job-posts.js';
import { type ClaimedJob, JobInterruptedError, type JobOutcome } from './job-progress.js';
import { type InboundMessage, indicatorOf } from './jobs.js';
import {
  ATTACHMENTS_NOT_FORWARDED,
  EMPTY_PROMPT_HELP,
  FILES_ONLY_NOTICE,
  failureKindOf,
  failureNotice,
  INTERRUPTED_AFTER_SEND_NOTICE,
  newReferenceId,
  ORIGINAL_GONE_NOTICE,
  promptTooLongNotice,
} from './notices.js';
import { promptFromSlackText } from './prompt.js';
import { type Answer, PromptExchange } from './prompt-exchange.js';
import type { SlackRefusals } from './slack-retry.js';

/** Beyond the agent's own timeout, how long a job taken over waits before it calls an answer lost. */
export const TAKEOVER_GRACE_MS = 5_000;
/** A job retaken this often for reasons other than Slack (say, a store that keeps failing) is given up. */
const MAX_ATTEMPTS = 25;

/**
 * One message: prompt → agent → reply in the thread. Progress is checkpointed in the job, so a job taken
 * over after a crash resumes where it stopped: the prompt is never sent twice, and nothing recorded as
 * posted or found in the thread is posted again.
 */
export class AnswerJob {
  private readonly posts: JobPosts;
  private readonly recorder: AnswerRecorder;
  private readonly exchange: PromptExchange;

  constructor(
    private readonly context: JobContext,
    private readonly refusals: SlackRefusals,
  ) {
    this.posts = new JobPosts(context);
    this.recorder = new AnswerRecorder(context);
    this.exchange = new PromptExchange(context);
  }

  async run(job: ClaimedJob, message: InboundMessage): Promise<JobOutcome> {
    const { progress, indicators } = this.context.options;
    const logger = this.context.jobLogger(job, message.thread, { eventId: message.eventId });
    const target: ReplyTarget = { channel: message.thread.channelId, threadTs: message.replyThreadTs };
    const indicator = indicatorOf(message);
    if (job.queued && job.attempts === 1) void indicators.clearQueued(indicator);
    const working = indicators.showWorking(indicator, {
      slowNoticeTs: job.slowNoticeTs,
      resumed: job.attempts > 1,
      onSlowNotice: (ts) => progress.setSlowNotice(job, ts),
      stillWanted: () =>
        this.context.assertWanted(job).then(
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
          return this.recorder.outputNotRecorded(job, message, target, error, logger);
        if (!(error instanceof SlackPostError)) throw error;
        return this.refusals.handle(job, target, error, logger);
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
      await this.posts.postOutput(job, recorded, target, {
        text: job.agentReply,
        isNotice: job.replyIsNotice,
      });
      // An answer kept through a Slack outage or a takeover: the thread is active now, when it is read.
      if (!job.replyIsNotice) {
        const agentId = this.context.options.agentFor(recorded.thread);
        await this.context.touch({ ...recorded.thread, agentId }, logger);
      }
      return { kind: 'done' };
    }
    if (job.sentAt) return this.resumeAfterSend(job, recorded, target, logger);
    if (job.attempts > MAX_ATTEMPTS) {
      logger.error({ attempts: job.attempts }, 'job retried too often; giving up');
      await this.posts.postNotice(job, target, 'failure', failureNotice('internal', newReferenceId()));
      return { kind: 'done' };
    }

    let message = recorded;
    if (recorded.resend) {
      const text = await this.context.options.reads.messageText(
        target.channel,
        recorded.ts,
        recorded.replyThreadTs,
      );
      if (text === undefined) {
        await this.posts.postNotice(job, target, 'gone', ORIGINAL_GONE_NOTICE);
        return { kind: 'done' };
      }
      message = { ...recorded, text };
    }
    // Checked on the raw text first: a huge message must cost nothing before it is refused.
    if (message.text.length > this.context.options.maxPromptChars * 4) {
      await this.posts.postNotice(
        job,
        target,
        'too-long',
        promptTooLongNotice(message.text.length, this.context.options.maxPromptChars),
      );
      return { kind: 'done' };
    }
    const prompt = await promptFromSlackText(
      message.text,
      botUserIdHere(this.context.options.botUserId),
      this.context.options.resolveUserName,
    );
    if (prompt === '') {
      await this.posts.postNotice(
        job,
        target,
        'help',
        message.hasFiles ? FILES_ONLY_NOTICE : EMPTY_PROMPT_HELP,
      );
      return { kind: 'done' };
    }
    if (prompt.length > this.context.options.maxPromptChars) {
      await this.posts.postNotice(
        job,
        target,
        'too-long',
        promptTooLongNotice(prompt.length, this.context.options.maxPromptChars),
      );
      return { kind: 'done' };
    }
    if (message.hasFiles && job.attempts === 1) {
      void this.context.options.replies.ephemeral(target, message.userId, ATTACHMENTS_NOT_FORWARDED);
    }

    let answer: Answer;
    try {
      answer = await this.exchange.ask(job, message, prompt, working, logger);
    } catch (error) {
      if (error instanceof JobInterruptedError || !isAgentServiceError(error)) throw error;
      if (this.context.abandoned) throw new JobInterruptedError('lost');
      // Recorded first, so a post that fails now is retried with the same words (and reference).
      const referenceId = newReferenceId();
      const kind = failureKindOf(error);
      logger[kind === 'misconfigured' ? 'error' : 'warn'](
        { err: error, ref: referenceId, kind },
        'message could not be answered',
      );
      const notice = failureNotice(kind, referenceId);
      await this.recorder.record(job, notice, true);
      await this.posts.postOutput(job, message, target, { text: notice, isNotice: true, wantedAsked: true });
      return { kind: 'done' };
    }
    const { reply, session, created, active } = answer;
    await this.deliver(job, message, target, { text: reply, isNotice: false, sessionId: session.sessionId });
    // Off the answer's path: the reply is in the thread already. Nearly always recorded with "sent" already
    // (see Answer); here only a row to rebuild (the previous release's).
    if (!created && !active) await this.context.touch(session, logger);
    return { kind: 'done' };
  }

  /**
   * Posts the agent's answer. One that fits in one message, on a job's first run, is posted before it is
   * recorded when the job is still this process's and wanted: nothing but this job reads it before the post,
   * and the job's end clears it anyway; it is recorded only if Slack refuses it, to be posted again later.
   * Otherwise (a longer answer, a job taken over or stopped meanwhile, a store that cannot say) it is recorded
   * first, held through a store outage, so whoever finishes the job posts the same words once.
   */
  private async deliver(
    job: ClaimedJob,
    message: InboundMessage,
    target: ReplyTarget,
    output: JobOutput,
  ): Promise<void> {
    const parts = this.posts.partsOf(message, output);
    const wanted = () =>
      this.context.assertWanted(job).then(
        () => true,
        () => false,
      );
    if (job.attempts === 1 && parts.length === 1 && (await wanted())) {
      try {
        await this.posts.postOutput(job, message, target, { ...output, wantedAsked: true }, parts);
      } catch (error) {
        if (error instanceof SlackPostError) await this.recorder.record(job, output.text, false);
        throw error;
      }
      return;
    }
    await this.recorder.record(job, output.text, false);
    await this.posts.postOutput(job, message, target, { ...output, wantedAsked: true }, parts);
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
        this.context.options.agentTimeoutMs +
        this.context.options.storeRetryWindowMs +
        TAKEOVER_GRACE_MS;
      const verdict = await this.context.options.progress.judgeSender(job, Date.now() >= deadline);
      if (verdict === undefined) {
        // The answer came in meanwhile (or the job is no longer this owner's: that interrupts here).
        await this.context.assertWanted(job);
        return { kind: 'defer', delayMs: 0, slackFailure: false };
      }
      if (!verdict.lost) {
        const delayMs = Math.max(0, Math.min(verdict.recheckInMs, deadline - Date.now()));
        return { kind: 'defer', delayMs, slackFailure: false };
      }
    }
    if ((await this.context.options.reads.postedJobParts(target, message.ts, job.dedupeKey)).size > 0)
      return { kind: 'done' };
    logger.warn({ session: job.sessionId }, 'prompt was sent before an interruption; its answer is lost');
    // Asking again is the author's choice (the prompt may be a command): one press of Send again.
    await this.posts.postNotice(
      job,
      target,
      'lost',
      INTERRUPTED_AFTER_SEND_NOTICE,
      sendAgainBlocks(INTERRUPTED_AFTER_SEND_NOTICE, job.dedupeKey),
    );
    return { kind: 'done' };
  }
}
