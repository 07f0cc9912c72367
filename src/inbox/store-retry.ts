import { setTimeout as sleep } from 'node:timers/promises';
import type { Hold } from '../conversation/job-progress.js';
import { StoreError } from '../store/database.js';

/**
 * Waits between attempts of an idempotent write that met a store error: about 20 s in all, so an answer
 * rides out a failover or a dropped connection instead of being lost with the job's progress.
 */
const STORE_RETRY_DELAYS_MS = [250, 500, 1_000, 2_000, 4_000, 4_000, 4_000, 4_000];
/**
 * Waits between attempts of a held write (see `Hold`), the last repeated: short, so an answer is recorded
 * within a second of the store's return, before another replica that finds its lease lapsed gives it up.
 */
const HOLD_RETRY_DELAYS_MS = [250, 500, 1_000];

/** Runs an idempotent write, retrying it through a short store outage, or for as long as `hold` says. */
export async function persist<T>(write: () => Promise<T>, hold?: Hold): Promise<T> {
  let firstFailure: number | undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      return await write();
    } catch (error) {
      if (!(error instanceof StoreError)) throw error;
      firstFailure ??= Date.now();
      const delay = hold ? holdDelay(attempt, firstFailure + hold.forMs) : STORE_RETRY_DELAYS_MS[attempt];
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
  return Math.min(HOLD_RETRY_DELAYS_MS[Math.min(attempt, HOLD_RETRY_DELAYS_MS.length - 1)] ?? 1_000, left);
}
