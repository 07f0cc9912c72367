/**
 * The one back-off rule for retries: the first retry waits `baseMs`, each further one twice as long, never more
 * than `maxMs`. The exponent is bounded so a job retried for days cannot overflow to Infinity.
 */
export function backoffMs(attempt: number, baseMs: number, maxMs = Number.POSITIVE_INFINITY): number {
  const doublings = Math.min(Math.max(attempt, 1) - 1, 30);
  return Math.min(maxMs, baseMs * 2 ** doublings);
}

/**
 * A delay between half of `ceilingMs` and all of it: retries of many threads after a shared outage spread out
 * instead of arriving together. `random` is injectable for tests.
 */
export function withJitter(ceilingMs: number, random: () => number = Math.random): number {
  return ceilingMs / 2 + random() * (ceilingMs / 2);
}

export interface RetryDelay {
  /** 1 for the first retry. */
  attempt: number;
  baseMs: number;
  /** The longest back-off; a longer Retry-After is still waited out. */
  maxMs?: number;
  /** How long the server asked to be left alone (Retry-After), if it said. */
  retryAfterMs?: number | undefined;
  /** The longest the caller can wait at all, Retry-After included: only where a deadline is near. */
  capMs?: number;
  random?: () => number;
}

/**
 * The one rule for the wait before a retry: the jittered back-off, or the server's Retry-After if that is
 * longer (a server is never asked again sooner than it said), and never beyond `capMs`.
 */
export function retryDelayMs(delay: RetryDelay): number {
  const { attempt, baseMs, maxMs, retryAfterMs, capMs = Number.POSITIVE_INFINITY, random } = delay;
  const backoff = withJitter(backoffMs(attempt, baseMs, maxMs), random);
  return Math.min(capMs, Math.max(retryAfterMs ?? 0, backoff));
}
