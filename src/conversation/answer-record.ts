import type { Logger } from '../observability/logger.js';
import { sendAgainBlocks } from '../slack-out/blocks.js';
import type { ReplyTarget } from '../slack-out/reply-target.js';
import { StoreError } from '../store/database.js';
import type { JobContext } from './job-context.js';
import { noticePart, UNRECORDED_PART } from './job-posts.js';
import { type ClaimedJob, JobInterruptedError, type JobOutcome } from './job-progress.js';
import type { InboundMessage } from './jobs.js';
import { answerDroppedNotice, newReferenceId } from './notices.js';

/** The store stayed unreachable for longer than STORE_RETRY_WINDOW: the job's output is not recorded. */
export class OutputNotRecordedError extends Error {
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

/** Holds a job's output until the store has it, and says so honestly when the store never comes back. */
export class AnswerRecorder {
  constructor(private readonly context: JobContext) {}

  /**
   * Records the job's output, which exists only in this process until then: through a store outage (a
   * restart, a failover) it is held and retried for up to STORE_RETRY_WINDOW, even after the job's lease
   * lapsed (another replica that took the job over then waits for it, see resumeAfterSend).
   */
  async record(job: ClaimedJob, text: string, isNotice: boolean): Promise<void> {
    try {
      await this.context.options.progress.storeReply(job, text, isNotice, {
        forMs: this.context.options.storeRetryWindowMs,
        signal: this.context.abandonSignal,
      });
    } catch (error) {
      if (!(error instanceof StoreError)) throw error;
      if (this.context.abandoned) throw new JobInterruptedError('lost');
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
  async outputNotRecorded(
    job: ClaimedJob,
    message: InboundMessage,
    target: ReplyTarget,
    error: OutputNotRecordedError,
    logger: Logger,
  ): Promise<JobOutcome> {
    const referenceId = newReferenceId();
    logger.error(
      { err: error.cause, ref: referenceId, windowMs: this.context.options.storeRetryWindowMs },
      'the store could not record the output for longer than STORE_RETRY_WINDOW; it is dropped',
    );
    if ((await this.context.options.reads.postedJobParts(target, message.ts, job.dedupeKey)).size > 0)
      return { kind: 'done' };
    if (this.context.abandoned) throw new JobInterruptedError('lost');
    const text = error.isNotice
      ? error.text
      : answerDroppedNotice(this.context.options.storeRetryWindowMs, referenceId);
    const blocks = error.isNotice ? [] : sendAgainBlocks(text, job.dedupeKey);
    await this.context.options.replies.postJobMessage(
      target,
      { ...noticePart(text), blocks },
      { job: job.dedupeKey, part: UNRECORDED_PART },
    );
    return { kind: 'done' };
  }
}
