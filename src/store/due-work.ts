import type { Logger } from '../observability/logger.js';
import { backoffMs } from '../util/backoff.js';
import { CoalescedPass } from '../util/coalesced-pass.js';
import type { Database } from './database.js';

/** Retries of a failed item are at most this far apart. */
const MAX_RETRY_DELAY_MS = 15 * 60 * 1000;
/** How long a claimed item is reserved for the process working on it. */
const CLAIM_LEASE_SECONDS = 120;

export interface DueWorkOptions<Row extends object> {
  /**
   * Claims up to `$2` due rows for `$1` seconds (pushing their next attempt into the future, so other replicas
   * skip them meanwhile: `UPDATE … next_attempt_at … FOR UPDATE SKIP LOCKED`), returning them.
   */
  claimSql: string;
  batch: number;
  /** Counts the rows not done yet. */
  pendingSql: string;
  /** Works on one claimed batch; each row records its own outcome (done, or its next attempt). */
  work: (rows: Row[]) => Promise<void>;
  /** How often rows left by an earlier run, or due for a retry, are looked for. */
  pollMs: number;
  /** The warning logged when a pass fails (it is retried at the next kick). */
  passFailed: string;
}

/**
 * Durable work in a table, each row retried with backoff until done, also after a restart and across
 * replicas: passes over the due rows, one at a time (a kick mid-pass asks for one more), on a timer and on
 * demand. The table, its rows and what is done with them are the caller's.
 */
export class DueWork<Row extends object> {
  private timer: NodeJS.Timeout | undefined;
  private readonly passes: CoalescedPass;
  private stopped = false;

  constructor(
    private readonly db: Database,
    logger: Pick<Logger, 'warn'>,
    private readonly options: DueWorkOptions<Row>,
  ) {
    this.passes = new CoalescedPass(
      () => this.runDue(),
      (error) => logger.warn({ err: error }, options.passFailed),
    );
  }

  /** Polls for due rows (including ones left by an earlier run) until stopped. */
  start(): void {
    this.stopped = false;
    this.kick();
    this.timer = setInterval(() => this.kick(), this.options.pollMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.passes.settled();
  }

  /** Runs a pass now (or right after the one in progress). */
  kick(): void {
    if (!this.stopped) this.passes.kick();
  }

  /** Rows not done yet (a gauge for operators). */
  async pendingCount(): Promise<number> {
    const rows = await this.db.query<{ count: string | number }>(this.options.pendingSql);
    return Number(rows[0]?.count ?? 0);
  }

  private async runDue(): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      const due = await this.db.query<Row>(this.options.claimSql, [CLAIM_LEASE_SECONDS, this.options.batch]);
      if (due.length === 0) return;
      await this.options.work(due);
    }
  }
}

/** When a row that failed its `attempts`-th time is tried again: backoff from `baseMs`, up to 15 minutes. */
export function rowRetryDelayMs(attempts: number, baseMs: number): number {
  return backoffMs(attempts, baseMs, MAX_RETRY_DELAY_MS);
}
