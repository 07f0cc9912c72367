import { setTimeout as sleep } from 'node:timers/promises';
import type { Hold } from '../conversation/job-progress.js';
import { StoreError } from '../store/database.js';
import { backoffMs } from '../util/backoff.js';

/**
 * Waits between attempts of an idempotent write that met a store error, doubling from 250 ms to 4 s while
 * they add up to at most `budgetMs` (STORE_WRITE_RETRY_MS, 20 s by default), so an answer rides out a
 * failover or a dropped connection instead of being lost with the job's progress.
 */
export function storeRetryDelays(budgetMs: number): number[] {
  const delays: number[] = [];
  let total = 0;
  for (let attempt = 1; total + backoffMs(attempt, 250, 4_000) <= budgetMs; attempt++) {
    const delay = backoffMs(attempt, 250, 4_000);
    delays.push(delay);
    total += delay;
  }
  return delays;
}

/** 250 ms, 500 ms, 1 s, 2 s, then 4 s four times: STORE_WRITE_RETRY_MS's default. */
export const DEFAULT_STORE_RETRY_DELAYS_MS: readonly number[] = storeRetryDelays(20_000);
/**
 * The longest wait between attempts of a held write (see `Hold`): short, so an answer is recorded within a
 * second of the store's return, before another replica that finds its lease lapsed gives it up.
 */
const HOLD_RETRY_MAX_MS = 1_000;

/**
 * Runs an idempotent write, retrying it through a short store outage (waiting `delaysMs` between attempts),
 * or for as long as `hold` says.
 */
export async function persist<T>(
  write: () => Promise<T>,
  hold?: Hold,
  delaysMs: readonly number[] = DEFAULT_STORE_RETRY_DELAYS_MS,
): Promise<T> {
  let firstFailure: number | undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      return await write();
    } catch (error) {
      if (!(error instanceof StoreError)) throw error;
      firstFailure ??= Date.now();
      const delay = hold ? holdDelay(attempt, firstFailure + hold.forMs) : delaysMs[attempt];
      if (delay === undefined || hold?.signal?.aborted) throw error;
      // An abort ends the wait; the next attempt then gives up if it fails too.
      await sleep(delay, undefined, { signal: hold?.signal }).catch(() => {});
    }
  }
}

/** The wait before attempt `attempt + 1` of a held write, or undefined once `deadline` has passed. */
export function holdDelay(attempt: number, deadline: number): number | undefined {
  const left = deadline - Date.now();
  if (left <= 0) return undefined;
  return Math.min(backoffMs(attempt + 1, 250, HOLD_RETRY_MAX_MS), left);
}
