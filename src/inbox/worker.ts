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
 * Claims jobs from the inbox and runs up to `concurrency` of them at once. Claiming is kicked when an event
 * is recorded and when a job ends, and by a poll for everything else.
 */
export class Worker {
  private readonly running = new Map<number, Promise<void>>();
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
      const room = this.options.concurrency - this.running.size;
      if (room <= 0) return;
      const jobs = await this.inbox.claim(room, [...this.running.keys()]);
      for (const job of jobs) this.launch(job);
      if (jobs.length < room) return;
    }
  }

  private launch(job: ClaimedJob): void {
    const run = this.runJob(job)
      .then(
        (outcome) => this.record(job, outcome),
        (error: unknown) => {
          this.logger.warn(
            { err: error, job: job.id },
            'job could not be completed; it is retried once its lease lapses',
          );
          return false;
        },
      )
      .then((threadHasMore) => {
        const wasFull = this.running.size >= this.options.concurrency;
        this.running.delete(job.id);
        // The thread's next message, or anything that waited for room, goes on at once; the poll finds the rest.
        if (threadHasMore || wasFull) this.kick();
      });
    this.running.set(job.id, run);
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
