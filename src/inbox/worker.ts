import { setTimeout as sleep } from 'node:timers/promises';
import type { ClaimedJob, JobOutcome, JobRunner } from '../conversation/job-progress.js';
import type { Logger } from '../observability/logger.js';
import { CoalescedPass } from '../util/coalesced-pass.js';
import { heartbeatEveryMs, type JobQueue } from './queue.js';

export interface WorkerOptions {
  /** Jobs (threads) worked on at once by this process. */
  concurrency: number;
  /** How often to look for work nobody announced (other replicas' events, deferred jobs, lapsed leases). */
  pollMs: number;
  leaseMs: number;
}

/**
 * Claims jobs from the inbox and runs up to `concurrency` of them at once. A job recorded by this process
 * while it has room is claimed as it is recorded and started here at once (`recording`); the others are
 * claimed by a pass, kicked when an event is recorded and when a job ends, and by a poll for everything else.
 */
export class Worker {
  private readonly running = new Map<number, Promise<void>>();
  /** Slots held for jobs being recorded right now, which may come back claimed. */
  private reserved = 0;
  private pollTimer: NodeJS.Timeout | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private readonly claiming = new CoalescedPass(
    () => this.fill(),
    (error) => this.logger.warn({ err: error }, 'could not claim work from the inbox; will retry'),
  );
  private stopped = true;

  constructor(
    /** Only the queue's side of the inbox: what the job does meanwhile is the runner's. */
    private readonly inbox: Pick<JobQueue, 'claim' | 'heartbeat' | 'defer' | 'finish' | 'release'>,
    private readonly runJob: JobRunner,
    private readonly logger: Logger,
    private readonly options: WorkerOptions,
  ) {}

  start(): void {
    this.stopped = false;
    this.pollTimer = setInterval(() => this.kick(), this.options.pollMs);
    this.pollTimer.unref();
    this.heartbeatTimer = setInterval(() => void this.heartbeat(), heartbeatEveryMs(this.options.leaseMs));
    this.heartbeatTimer.unref();
    this.kick();
  }

  get inFlight(): number {
    return this.running.size;
  }

  /**
   * Records a job through `record`, asking it to claim the job for this process as it records it when there
   * is room (`claim`): a job that comes back claimed starts here at once, with no claim pass (and no commit)
   * between its event and its work.
   */
  async recording<T extends { claimed?: ClaimedJob }>(record: (claim: boolean) => Promise<T>): Promise<T> {
    if (this.stopped || this.running.size + this.reserved >= this.options.concurrency) return record(false);
    this.reserved++;
    let result: T;
    try {
      result = await record(true);
    } finally {
      this.reserved--;
    }
    const { claimed } = result;
    if (claimed && this.stopped) {
      // Stopping meanwhile: handed back for any replica (or the next start) to take at once.
      void this.inbox.release([claimed.id]).catch(() => {});
    } else if (claimed) this.launch(claimed);
    return result;
  }

  /** Looks for runnable jobs now (coalesced with a pass already under way). */
  kick(): void {
    if (!this.stopped) this.claiming.kick();
  }

  /**
   * Stops claiming, waits up to `drainMs` for running jobs, then hands back those not yet sent to the agent
   * so another replica (or the next start) takes them at once.
   */
  async stop(drainMs: number): Promise<{ finished: boolean; handedBack: number }> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    await this.claiming.settled();
    const finished = await Promise.race([
      Promise.all(this.running.values()).then(() => true),
      sleep(drainMs, false, { ref: false }),
    ]);
    clearInterval(this.heartbeatTimer);
    let handedBack = 0;
    if (!finished) {
      handedBack = await this.inbox.release([...this.running.keys()]).catch(() => 0);
      this.logger.warn({ stillRunning: this.running.size, handedBack }, 'shutdown drain bound reached');
    }
    return { finished, handedBack };
  }

  private async fill(): Promise<void> {
    while (!this.stopped) {
      const room = this.options.concurrency - this.running.size - this.reserved;
      if (room <= 0) return;
      const jobs = await this.inbox.claim(room, [...this.running.keys()]);
      for (const job of jobs) this.launch(job);
      if (jobs.length < room) return;
    }
  }

  private launch(job: ClaimedJob): void {
    // Once per process: a job recorded claimed after its lease lapsed (its statement waited on a lock) may also
    // come back from a claim pass sent before it started here. The owner is the process, so a second run would
    // pass every check of the first and send its prompt again.
    if (this.running.has(job.id)) return;
    const run = this.runToEnd(job).then((threadHasMore) => {
      const wasFull = this.running.size >= this.options.concurrency;
      this.running.delete(job.id);
      // The thread's next message, or anything that waited for room, goes on at once; the poll finds the rest.
      if (threadHasMore || wasFull) this.kick();
    });
    this.running.set(job.id, run);
  }

  /** Runs a job and records how it ended; says whether its thread has a next message to run now. */
  private async runToEnd(job: ClaimedJob): Promise<boolean> {
    let outcome: JobOutcome;
    try {
      outcome = await this.runJob(job);
    } catch (error) {
      this.logger.warn(
        { err: error, job: job.id },
        'job could not be completed; it is retried once its lease lapses',
      );
      return false;
    }
    return this.record(job, outcome);
  }

  /**
   * Records the outcome (the inbox retries through a short store outage); failing that, the lease lapses and
   * the job is retaken. Says whether the job's thread has a next message to run now.
   */
  private async record(job: ClaimedJob, outcome: JobOutcome): Promise<boolean> {
    try {
      if (outcome.kind === 'done') return (await this.inbox.finish(job)).threadHasMore;
      if (outcome.kind === 'defer') await this.inbox.defer(job, outcome.delayMs, outcome.slackFailure);
    } catch (error) {
      this.logger.warn(
        { err: error, job: job.id },
        'could not record how a job ended; it is retaken once its lease lapses',
      );
    }
    return false;
  }

  private async heartbeat(): Promise<void> {
    try {
      await this.inbox.heartbeat([...this.running.keys()]);
    } catch (error) {
      this.logger.warn({ err: error }, 'could not extend job leases');
    }
  }
}
