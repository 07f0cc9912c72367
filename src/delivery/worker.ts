import type { Logger } from '../observability/logger.js';
import { CoalescedPass } from '../util/coalesced-pass.js';
import type { ClaimedJob, Inbox } from './inbox.js';

export interface WorkerOptions {
  /** Jobs (threads) worked on at once by this process. */
  concurrency: number;
  /** How often to look for work nobody announced (other replicas' events, expired leases). */
  pollMs: number;
  leaseMs: number;
}

/** Runs one claimed job to its end; resolves whatever happened (failures are the runner's to report). */
export type JobRunner = (job: ClaimedJob) => Promise<void>;

/**
 * Claims jobs from the inbox and runs them. Claiming is kicked right after an event is recorded and after
 * each job ends (for the next job of the same thread), and by a slow poll for everything else.
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
  /** Claiming stopped for lack of room: claim again as soon as a job ends. */
  private saturated = false;

  constructor(
    private readonly inbox: Inbox,
    private readonly runJob: JobRunner,
    private readonly logger: Logger,
    private readonly options: WorkerOptions,
  ) {}

  start(): void {
    this.stopped = false;
    this.pollTimer = setInterval(() => this.kick(), this.options.pollMs);
    this.pollTimer.unref();
    this.heartbeatTimer = setInterval(() => void this.heartbeat(), Math.max(50, this.options.leaseMs / 3));
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
   * Stops claiming, waits up to `drainMs` for running jobs, then hands back those not yet sent to the
   * agent so another replica (or the next start) takes them at once.
   */
  async stop(drainMs: number): Promise<{ finished: boolean; handedBack: number }> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    await this.claiming.settled();
    const finished = await Promise.race([
      Promise.all(this.running.values()).then(() => true),
      new Promise<false>((resolve) => setTimeout(resolve, drainMs, false).unref()),
    ]);
    clearInterval(this.heartbeatTimer);
    let handedBack = 0;
    if (!finished) {
      handedBack = await this.inbox.release([...this.running.keys()]).catch(() => 0);
      this.logger.warn({ stillRunning: this.running.size, handedBack }, 'shutdown drain bound reached');
    }
    return { finished, handedBack };
  }

  /** Whether this process can take another job now. */
  hasRoom(): boolean {
    return !this.stopped && this.running.size < this.options.concurrency;
  }

  /** Runs a job the intake claimed (with its thread's lease) while recording it. */
  adopt(job: ClaimedJob): void {
    this.launch(job);
  }

  /** Takes one thread's next job now, if nobody else is working on that thread. */
  kickThread(threadKey: string): void {
    if (!this.hasRoom()) {
      this.saturated = true;
      return;
    }
    this.inbox.claim(1, threadKey).then(
      (jobs) => {
        for (const job of jobs) this.launch(job);
      },
      (error: unknown) => {
        this.logger.warn({ err: error }, 'could not claim a thread; the poll will');
      },
    );
  }

  private async fill(): Promise<void> {
    while (!this.stopped) {
      const room = this.options.concurrency - this.running.size;
      if (room <= 0) {
        this.saturated = true;
        return;
      }
      const want = Math.min(room, 200);
      const jobs = await this.inbox.claim(want);
      for (const job of jobs) this.launch(job);
      if (jobs.length < want) return;
    }
  }

  private launch(job: ClaimedJob): void {
    // A job runs at most once per process, whatever a late lease says.
    if (this.running.has(job.id)) return;
    const run = this.runJob(job)
      .catch((error: unknown) => this.logger.error({ err: error, job: job.id }, 'job runner failed'))
      .then(() => this.inbox.finish(job.id, this.hasRoom()))
      .then(
        (next) => {
          this.running.delete(job.id);
          // The thread's next message goes on at once; anything that waited for room is claimed.
          if (next) this.launch(next);
          if (this.saturated) {
            this.saturated = false;
            this.kick();
          }
        },
        (error: unknown) => {
          this.running.delete(job.id);
          // The lease runs out and the job is retried; look for other work meanwhile.
          this.logger.warn(
            { err: error, job: job.id },
            'could not record a finished job; it will be retried',
          );
          this.kick();
        },
      );
    this.running.set(job.id, run);
  }

  private async heartbeat(): Promise<void> {
    try {
      await this.inbox.heartbeat([...this.running.keys()]);
    } catch (error) {
      this.logger.warn({ err: error }, 'could not extend job leases');
    }
  }
}
