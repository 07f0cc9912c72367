import { setMaxListeners } from 'node:events';
import type { AgentClient } from '../agent/client.js';
import type { AgentFor } from '../agent/routing.js';
import type { Logger } from '../observability/logger.js';
import type { Tracing } from '../observability/tracing.js';
import type { SessionManager } from '../sessions/manager.js';
import type { ThreadKey } from '../sessions/thread-key.js';
import type { AgentFeatures } from '../slack-out/agent-features.js';
import type { WorkIndicators } from '../slack-out/indicators.js';
import type { SlackReads } from '../slack-out/reads.js';
import type { UserNameResolver } from '../slack-out/user-names.js';
import type { SlackWrites } from '../slack-out/writes.js';
import { type ClaimedJob, JobInterruptedError, type JobProgress } from './job-progress.js';
import type { ViewingContext } from './viewing-context.js';

export interface RelayOptions {
  /** Where a running job records how far it got (the inbox). */
  progress: JobProgress;
  /** The agent that answers a conversation. */
  agentFor: AgentFor;
  agent: AgentClient;
  sessions: SessionManager;
  indicators: WorkIndicators;
  replies: SlackWrites;
  reads: SlackReads;
  /** Agent view sessions: a reset closes the thread's, if the bot opened one. */
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

/** What every kind of job shares: the options, and whether the process still lets jobs act. */
export class JobContext {
  /** Set when shutdown stops waiting for the jobs still running: they must not act any more. */
  private abandonedFlag = false;
  /** Ends the holding of answers the store cannot record, when shutdown stops waiting. */
  private readonly abandoning = new AbortController();

  constructor(readonly options: RelayOptions) {
    // Every job holding an answer through a store outage waits on this one signal (up to WORKER_CONCURRENCY).
    setMaxListeners(0, this.abandoning.signal);
  }

  get abandoned(): boolean {
    return this.abandonedFlag;
  }

  /** Aborted once shutdown stops waiting for running jobs. */
  get abandonSignal(): AbortSignal {
    return this.abandoning.signal;
  }

  abandon(): void {
    this.abandonedFlag = true;
    this.abandoning.abort();
  }

  /**
   * Before each Slack side effect: the job is still this process's, and wanted. `justAsked`: the store was
   * asked that a moment ago (storing the answer asks it too).
   */
  async assertWanted(job: ClaimedJob, justAsked = false): Promise<void> {
    if (this.abandonedFlag) throw new JobInterruptedError('lost');
    if (!justAsked) await this.options.progress.assertWanted(job);
  }

  /** Every line logged about a job names it and its thread. */
  jobLogger(job: ClaimedJob, thread: ThreadKey, extra: Record<string, unknown> = {}): Logger {
    return this.options.logger.child({
      job: job.id,
      ...extra,
      team: thread.teamId,
      channel: thread.channelId,
      thread: thread.threadTs,
    });
  }

  /** Records the thread's activity; a failure only costs an earlier idle expiry, so it is logged. */
  async touch(session: ThreadKey & { agentId: string }, logger: Logger): Promise<void> {
    await this.options.sessions.touch(session).catch((error: unknown) => {
      logger.warn({ err: error }, 'could not record thread activity');
    });
  }
}
