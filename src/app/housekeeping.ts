import type { Logger } from '../observability/logger.js';

const HOUSEKEEPING_INTERVAL_MS = 60 * 60 * 1000;

/** Forgets expired store rows: at start-up and hourly, every pruner at once. */
export class Housekeeping {
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<void> | undefined;

  constructor(
    private readonly pruners: readonly (() => Promise<unknown>)[],
    private readonly logger: Pick<Logger, 'warn'>,
    private readonly intervalMs = HOUSEKEEPING_INTERVAL_MS,
  ) {}

  start(): void {
    // At start-up too: a process restarted more often than hourly (deploys, crashes) still forgets old rows.
    this.prune();
    this.timer = setInterval(() => this.prune(), this.intervalMs);
    this.timer.unref();
  }

  /** No pass starts from now on; one under way goes on (see `settled`). */
  stop(): void {
    clearInterval(this.timer);
  }

  /** Resolves once the pass under way (if any) has ended; it never rejects. */
  async settled(): Promise<void> {
    await this.pass;
  }

  private prune(): void {
    this.pass = Promise.all(this.pruners.map((prune) => prune())).then(
      () => {},
      (error: unknown) => this.logger.warn({ err: error }, 'could not prune expired store rows'),
    );
  }
}
