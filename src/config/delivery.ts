import { type EnvReader, parseDuration } from './env-reader.js';
import type { DeliveryConfig } from './types.js';

export function readDeliveryConfig(reader: EnvReader): DeliveryConfig {
  return {
    concurrency: reader.integer('WORKER_CONCURRENCY', 200, 1, 10_000),
    leaseMs: reader.integer('JOB_LEASE_MS', 10_000, 500, 3_600_000),
    shutdownTimeoutMs: reader.integer('SHUTDOWN_TIMEOUT_MS', 20_000, 0, 3_600_000),
    replyRetryWindowMs: reader.duration('REPLY_RETRY_WINDOW', '1h'),
    // Below Slack's last retry of an event (about 5 minutes after the first delivery): that retry gets the note.
    storeOutageAckMs: reader.integer('STORE_OUTAGE_ACK_MS', 120_000, 0, 240_000),
    storeRetryWindowMs: storeRetryWindow(reader),
    storeWriteRetryMs: reader.integer('STORE_WRITE_RETRY_MS', 20_000, 0, 600_000),
  };
}

/** From a second to an hour: a failover takes minutes, and no window would drop every answer at the first error. */
function storeRetryWindow(reader: EnvReader): number {
  const raw = reader.read('STORE_RETRY_WINDOW');
  const fallback = 180_000;
  if (raw === undefined) return fallback;
  const ms = parseDuration(raw);
  if (ms === undefined || ms < 1_000 || ms > 3_600_000) {
    reader.fail('STORE_RETRY_WINDOW', `must be a duration from 1s to 1h, like 3m or 90s (got "${raw}")`);
    return fallback;
  }
  return ms;
}
