import type { ClaimedJob, Hold, JobProgress, SenderVerdict } from '../conversation/job-progress.js';
import type { Database } from '../store/database.js';
import { type EditOutcome, type EnqueuedReset, JobCancellation, type StopOutcome } from './cancellation.js';
import type { MessageRef } from './claims.js';
import { InboxJobProgress } from './progress.js';
import { InboxPruning } from './pruning.js';
import { type AdmitLimits, type AdmitOutcome, JobQueue, type NewJob } from './queue.js';
import { DEFAULT_STORE_RETRY_DELAYS_MS } from './store-retry.js';
import { UserLimit } from './user-limit.js';

export type { EnqueuedReset } from './cancellation.js';
export type { AdmitLimits, AdmitOutcome, NewJob } from './queue.js';

/**
 * The durable inbox, as the rest of the bot sees it: one name for the queue of Slack work on its own
 * tables. Each job is done by a module of its own; this only puts them under one roof:
 * the queue (admit, claim, leases, finish: queue.ts), a running job's checkpoints (progress.ts), the per-user
 * limit (user-limit.ts), ending work before it runs (cancellation.ts) and forgetting old work (pruning.ts).
 */
export class Inbox implements JobProgress {
  private readonly queue: JobQueue;
  private readonly progress: InboxJobProgress;
  private readonly userLimit: UserLimit;
  private readonly cancellation: JobCancellation;
  private readonly pruning: InboxPruning;

  /** `storeRetryDelaysMs`: the waits between attempts of a store write that failed (see storeRetryDelays). */
  constructor(
    db: Database,
    owner: string,
    leaseMs: number,
    storeRetryDelaysMs: readonly number[] = DEFAULT_STORE_RETRY_DELAYS_MS,
  ) {
    this.queue = new JobQueue(db, owner, leaseMs, storeRetryDelaysMs);
    this.progress = new InboxJobProgress(db, owner, leaseMs, storeRetryDelaysMs);
    this.userLimit = new UserLimit(db);
    this.cancellation = new JobCancellation(db);
    this.pruning = new InboxPruning(db, this.userLimit);
  }

  get owner(): string {
    return this.queue.owner;
  }

  // The queue (see JobQueue).
  admit(
    job: NewJob,
    limits: AdmitLimits,
    claim = false,
  ): Promise<{ outcome: AdmitOutcome; queued: boolean; claimed?: ClaimedJob }> {
    return this.queue.admit(job, limits, claim);
  }
  hasThread(threadKey: string): Promise<boolean> {
    return this.queue.hasThread(threadKey);
  }
  claim(limit: number, running: readonly number[] = []): Promise<ClaimedJob[]> {
    return this.queue.claim(limit, running);
  }
  expireLeases(): Promise<void> {
    return this.queue.expireLeases();
  }
  heartbeat(ids: readonly number[]): Promise<void> {
    return this.queue.heartbeat(ids);
  }
  defer(job: ClaimedJob, delayMs: number, slackFailure: boolean): Promise<void> {
    return this.queue.defer(job, delayMs, slackFailure);
  }
  finish(job: ClaimedJob): Promise<{ threadHasMore: boolean }> {
    return this.queue.finish(job);
  }
  release(ids: readonly number[]): Promise<number> {
    return this.queue.release(ids);
  }
  requestOf(dedupeKey: string): Promise<{ threadKey: string; userId?: string } | undefined> {
    return this.queue.requestOf(dedupeKey);
  }
  counts(): Promise<{ pending: number; running: number }> {
    return this.queue.counts();
  }
  openMessagesOf(prefix: string, userId: string): Promise<unknown[]> {
    return this.queue.openMessagesOf(prefix, userId);
  }

  // A running job's checkpoints (see InboxJobProgress).
  assertWanted(job: ClaimedJob): Promise<void> {
    return this.progress.assertWanted(job);
  }
  markSent(job: ClaimedJob, sessionId: string, activityKey?: string): Promise<boolean> {
    return this.progress.markSent(job, sessionId, activityKey);
  }
  markUnsent(job: ClaimedJob): Promise<void> {
    return this.progress.markUnsent(job);
  }
  judgeSender(job: ClaimedJob, force: boolean): Promise<SenderVerdict | undefined> {
    return this.progress.judgeSender(job, force);
  }
  storeReply(job: ClaimedJob, reply: string, isNotice: boolean, hold?: Hold): Promise<void> {
    return this.progress.storeReply(job, reply, isNotice, hold);
  }
  markPartsPosted(job: ClaimedJob, count: number): Promise<void> {
    return this.progress.markPartsPosted(job, count);
  }
  setSlowNotice(job: ClaimedJob, ts: string): Promise<void> {
    return this.progress.setSlowNotice(job, ts);
  }
  hasEarlierWork(job: ClaimedJob): Promise<boolean> {
    return this.progress.hasEarlierWork(job);
  }

  // The per-user limit (see UserLimit).
  chargeUser(userId: string, perMinute: number): Promise<boolean> {
    return this.userLimit.charge(userId, perMinute);
  }

  // Ending work before it runs (see JobCancellation).
  enqueueReset(job: NewJob, options: { noSession: boolean }): Promise<EnqueuedReset> {
    return this.cancellation.enqueueReset(job, options);
  }
  stop(threadKey: string, userId: string, request: MessageRef): Promise<StopOutcome> {
    return this.cancellation.stop(threadKey, userId, request);
  }
  cancelOpenWithPrefix(prefix: string, recordedBefore?: Date): Promise<number> {
    return this.cancellation.cancelOpenWithPrefix(prefix, recordedBefore);
  }
  cancelOpenOfOrg(enterpriseId: string, removedAt?: Date): Promise<number> {
    return this.cancellation.cancelOpenOfOrg(enterpriseId, removedAt);
  }
  editMessage(dedupeKey: string, edit: (payload: unknown) => unknown): Promise<EditOutcome> {
    return this.cancellation.editMessage(dedupeKey, edit);
  }
  cancelWaitingMessage(dedupeKey: string): Promise<unknown> {
    return this.cancellation.cancelWaitingMessage(dedupeKey);
  }

  // Forgetting old work (see InboxPruning).
  prune(olderThanDays?: number, batch?: number): Promise<number> {
    return this.pruning.prune(olderThanDays, batch);
  }
}
