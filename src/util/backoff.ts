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
