import type { Logger } from '../observability/logger.js';
import { isSlackThread } from './conversation-of.js';
import type { SessionManager } from './manager.js';
import type { ThreadSession } from './store.js';

/** Periodically ends conversations idle longer than the TTL (SESSION_IDLE_TTL; 0 = never). */
export class IdleSweeper {
  private timer: NodeJS.Timeout | undefined;
  private sweeping = false;

  constructor(
    private readonly sessions: SessionManager,
    private readonly idleTtlMs: number,
    private readonly logger: Logger,
    /**
     * Told of the ended conversations that may have an agent view session to close, after their agent
     * sessions were retired (best effort).
     */
    private readonly onExpired: (sessions: ThreadSession[]) => Promise<void> = async () => {},
  ) {}

  start(): void {
    if (this.idleTtlMs <= 0) return;
    // Often enough that a session outlives its TTL by at most a quarter of it (and 10 minutes at most).
    const everyMs = Math.max(1_000, Math.min(this.idleTtlMs / 4, 10 * 60 * 1000));
    void this.sweep();
    this.timer = setInterval(() => void this.sweep(), everyMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  async sweep(): Promise<number> {
    if (this.sweeping) return 0;
    this.sweeping = true;
    try {
      const expired = await this.sessions.expireIdle(this.idleTtlMs);
      if (expired.length > 0) {
        this.logger.info({ expired: expired.length }, 'idle agent sessions expired');
        await this.onExpired(expired.filter(isSlackThread)).catch((error: unknown) =>
          this.logger.warn({ err: error }, 'could not close the Slack sessions of idle conversations'),
        );
      }
      return expired.length;
    } catch (error) {
      this.logger.warn({ err: error }, 'idle session sweep failed; will retry');
      return 0;
    } finally {
      this.sweeping = false;
    }
  }
}
