import { AnswerJob } from './answer-job.js';
import { JobContext, type RelayOptions } from './job-context.js';
import { type ClaimedJob, JobInterruptedError, type JobOutcome } from './job-progress.js';
import { type InboundMessage, inboundMessageOf, type ResetRequest, resetRequestOf } from './jobs.js';
import { ResetJob } from './reset-job.js';
import { SlackRefusals } from './slack-retry.js';

export type { RelayOptions } from './job-context.js';

/**
 * Runs one inbox job by its kind: a message (AnswerJob: prompt → agent → reply in the thread) or a thread
 * reset (ResetJob). Progress is checkpointed in the job, so a job taken over after a crash resumes where it
 * stopped: the prompt is never sent twice, and nothing recorded as posted or found in the thread is posted
 * again. Before each Slack side effect the job is checked to be still this process's and still wanted (its
 * author may have stopped it).
 */
export class Relay {
  private readonly context: JobContext;
  private readonly answers: AnswerJob;
  private readonly resets: ResetJob;

  constructor(options: RelayOptions) {
    this.context = new JobContext(options);
    const refusals = new SlackRefusals(this.context);
    this.answers = new AnswerJob(this.context, refusals);
    this.resets = new ResetJob(this.context, refusals);
  }

  /**
   * The process is going away with jobs still running (the drain bound passed): from now on they post
   * nothing and record nothing more, and an agent call cut short by the closing connection is no fault of
   * the agent service. Each job stays as far as it got, for the next owner to take over.
   */
  abandonRunning(): void {
    this.context.abandon();
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
    return this.context.options.tracing.inSpanFrom(payload.traceparent, 'job', attributes, async () => {
      try {
        if (job.kind === 'reset') return await this.resets.run(job, resetRequestOf(job.payload));
        return await this.answers.run(job, inboundMessageOf(job.payload));
      } catch (error) {
        if (error instanceof JobInterruptedError)
          // A cancelled job's row is already over: nothing is left to record, as for one taken over.
          return error.reason === 'stopped' ? { kind: 'done' } : { kind: 'lost' };
        throw error;
      }
    });
  };
}
