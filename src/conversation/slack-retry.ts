import type { Logger } from '../observability/logger.js';
import { permanentRefusalOf, type SlackPostError } from '../slack-out/failures.js';
import type { ReplyTarget } from '../slack-out/reply-target.js';
import { retryDelayMs } from '../util/backoff.js';
import type { JobContext } from './job-context.js';
import { GAVE_UP_PART } from './job-posts.js';
import type { ClaimedJob, JobOutcome } from './job-progress.js';
import type { InboundMessage } from './jobs.js';
import { answerRefusedNote, newReferenceId, slackRefusedNotice } from './notices.js';

const SLACK_BACKOFF_MAX_MS = 60_000;

/** How long Slack has been refusing this job's posts (0 on the first refusal). */
export function slackFailingForMs(job: Pick<ClaimedJob, 'slackFailingSince'>, now = Date.now()): number {
  return now - (job.slackFailingSince?.getTime() ?? now);
}

/**
 * The wait before a job Slack refused runs again: a jittered back-off doubling per attempt up to a minute,
 * or Slack's Retry-After if that is longer.
 */
export function slackRetryDelayMs(
  attempts: number,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number {
  // No cap: the job is stored meanwhile, and nobody waits on the call.
  return retryDelayMs({
    attempt: attempts,
    baseMs: 1_000,
    maxMs: SLACK_BACKOFF_MAX_MS,
    retryAfterMs,
    random,
  });
}

/** What a job does when Slack refuses its output: retry later, for up to REPLY_RETRY_WINDOW, or give up. */
export class SlackRefusals {
  constructor(private readonly context: JobContext) {}

  /** Slack refused a post: keep the job and retry with backoff, for up to REPLY_RETRY_WINDOW. */
  async handle(
    job: ClaimedJob,
    target: ReplyTarget,
    error: SlackPostError,
    logger: Logger,
  ): Promise<JobOutcome> {
    const { options } = this.context;
    if (!error.transient) {
      // No retry helps (a free workspace's message limit until it resets, a read-only channel, an answer Slack
      // will not take as it is): its author is told privately why, where a note can reach them.
      const referenceId = newReferenceId();
      const refusal = permanentRefusalOf(error.code);
      logger.error(
        { err: error, code: error.code, ref: referenceId },
        refusal === 'message-limit'
          ? "Slack refused the answer: the workspace has reached its plan's message limit; the answer is dropped"
          : 'Slack will not take the answer to this message; the answer is dropped',
      );
      const note = answerRefusedNote(refusal, referenceId);
      const author = (job.payload as Partial<InboundMessage>).userId;
      if (note && author) {
        await this.context.assertWanted(job);
        // Where the thread is what refuses posts, the note goes to the channel, where its author sees it.
        const noteTarget =
          refusal === 'thread-locked' || refusal === 'no-threads' ? { channel: target.channel } : target;
        await options.replies.ephemeral(noteTarget, author, note);
      }
      return { kind: 'done' };
    }
    const failingFor = slackFailingForMs(job);
    if (failingFor >= options.replyRetryWindowMs) {
      const referenceId = newReferenceId();
      logger.error(
        { err: error, ref: referenceId, failingForMs: failingFor },
        'Slack refused the answer for too long; giving up',
      );
      // The failed post may have taken long: the job may have been stopped or taken over meanwhile.
      await this.context.assertWanted(job);
      // Marked, so a run of the job after a failed finish sees it gave up already.
      await options.replies.notice(target, slackRefusedNotice(referenceId), {
        job: job.dedupeKey,
        part: GAVE_UP_PART,
      });
      return { kind: 'done' };
    }
    return this.retryLater(job, error, logger);
  }

  /** Whether a refused post is worth another try: Slack may take it later, and the window is still open. */
  mayRetry(job: ClaimedJob, error: SlackPostError): boolean {
    return error.transient && slackFailingForMs(job) < this.context.options.replyRetryWindowMs;
  }

  /** Keeps the job, with what it is to post, for another try after a back-off (or Slack's Retry-After). */
  retryLater(job: ClaimedJob, error: SlackPostError, logger: Logger): JobOutcome {
    const delayMs = slackRetryDelayMs(job.attempts, error.retryAfterMs);
    logger.warn(
      { code: error.code, retryInMs: Math.round(delayMs) },
      'Slack refused a post; the answer is kept and retried',
    );
    return { kind: 'defer', delayMs, slackFailure: true };
  }
}
