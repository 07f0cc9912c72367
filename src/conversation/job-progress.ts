/**
 * What a job runner needs from the queue that hands it jobs: the claimed job as recorded, how it ended, and
 * the checkpoints it records on the way. Declared here, on the conversation's side, and implemented by the
 * inbox, so the conversation depends on no queue.
 */

export type JobKind = 'message' | 'reset';

/** A job this process holds the lease of, with whatever progress an earlier owner recorded. */
export interface ClaimedJob {
  id: number;
  threadKey: string;
  dedupeKey: string;
  kind: JobKind;
  payload: unknown;
  userId?: string;
  /** 1 on the first claim; more when it was deferred, or an earlier owner died or handed it back. */
  attempts: number;
  sessionId?: string;
  /** When the prompt was sent to the agent; once set it is never sent again. */
  sentAt?: Date;
  /** What is to be posted: the agent's answer, or a notice (when `replyIsNotice`). */
  agentReply?: string;
  replyIsNotice: boolean;
  partsPosted: number;
  slowNoticeTs?: string;
  /** Recorded behind other work of its thread: it shows the "queued" indicator until it starts. */
  queued: boolean;
  /** Since when Slack has been refusing this job's posts (it is retried until REPLY_RETRY_WINDOW). */
  slackFailingSince?: Date;
  /** The answer of the process that sent the prompt was given up (it was gone): the thread is told so. */
  answerLost: boolean;
}

/** How a job ended for this process. */
export type JobOutcome =
  /** Finished: answered, failed with a notice, or stopped. */
  | { kind: 'done' }
  /** Try again later, with all progress kept (Slack refusing posts, an earlier owner maybe still waiting). */
  | { kind: 'defer'; delayMs: number; slackFailure: boolean }
  /** Another owner has it now: leave it alone. */
  | { kind: 'lost' };

/**
 * Runs one claimed job. Throwing means the job could not be brought to an end (the store is unreachable):
 * it stays claimed until its lease lapses and is then taken again, by this process or another.
 */
export type JobRunner = (job: ClaimedJob) => Promise<JobOutcome>;

/** The verdict on the process that sent a job's prompt, asked by the job's next owner. */
export type SenderVerdict =
  /** Gone, or past the time it could still be waiting: its answer is given up, and never stored now. */
  | { lost: true }
  /** Not known yet, or heard from: ask again after `recheckInMs`. */
  | { lost: false; recheckInMs: number };

/** How long a write that keeps an answer is retried through store errors (see `storeReply`). */
export interface Hold {
  /** From the first failure on. */
  forMs: number;
  /** Aborted when the process stops waiting for its jobs: then the write is given up. */
  signal?: AbortSignal;
}

/**
 * Where a job its author stopped had got to: none there (`none`), its prompt not sent yet and now never
 * (`unsent`), sent and its answer not posted (`sent`), or its answer partly posted (`partly-posted`).
 */
export type StoppedWork = 'none' | 'unsent' | 'sent' | 'partly-posted';

/**
 * Why a job may no longer have side effects: another owner took it over, its author stopped it, or its
 * conversation ended under it (`cancelled`: a closed channel, an uninstall).
 */
export type JobInterruption = 'lost' | 'stopped' | 'cancelled';

const INTERRUPTION_MESSAGES: Record<JobInterruption, string> = {
  lost: 'job taken over by another owner',
  stopped: 'job stopped by its author',
  cancelled: 'job cancelled: its conversation ended',
};

export class JobInterruptedError extends Error {
  constructor(readonly reason: JobInterruption) {
    super(INTERRUPTION_MESSAGES[reason]);
    this.name = 'JobInterruptedError';
  }
}

/**
 * The checkpoints of a running job. Each write lands only while the job is this owner's and wanted, and
 * otherwise throws JobInterruptedError; a short store outage is ridden out inside.
 */
export interface JobProgress {
  /** Throws JobInterruptedError unless the job is still this owner's and its author has not stopped it. */
  assertWanted(job: ClaimedJob): Promise<void>;
  /**
   * Recorded before the prompt leaves: whatever crashes after this, it is never sent again. With
   * `activityKey` (the conversation's lifecycle row, see activityRowKey), the same statement records the
   * thread's activity; true when it did (false: no complete row to update, which `touch` rebuilds).
   */
  markSent(job: ClaimedJob, sessionId: string, activityKey?: string): Promise<boolean>;
  /** The service refused the prompt unrun (its session was gone): recorded as not sent after all. */
  markUnsent(job: ClaimedJob): Promise<void>;
  /**
   * Whether the process that sent the prompt is gone (its answer then given up for good), or still heard
   * from; undefined: nothing to judge any more (the answer is in, or the job is no longer this owner's).
   * `force`: past the time it could still be waiting.
   */
  judgeSender(job: ClaimedJob, force: boolean): Promise<SenderVerdict | undefined>;
  /** Records what is to be posted (held through a store outage for `hold.forMs`), then asks assertWanted's question. */
  storeReply(job: ClaimedJob, reply: string, isNotice: boolean, hold?: Hold): Promise<void>;
  markPartsPosted(job: ClaimedJob, count: number): Promise<void>;
  setSlowNotice(job: ClaimedJob, ts: string): Promise<void>;
  /** Whether anything was asked of the bot in this job's thread before it (a first mention has nothing). */
  hasEarlierWork(job: ClaimedJob): Promise<boolean>;
}
