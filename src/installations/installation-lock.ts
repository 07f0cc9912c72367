import type { Database } from '../store/database.js';

/** Runs `work` while no other process (or call) holds the lock of `name`. */
export type InstallationLock = <T>(name: string, work: () => Promise<T>) => Promise<T>;

/**
 * One installation's lock, for the writes that must not interleave: spending its refresh token (Slack
 * accepts each once) and removing it (a refresh that read it before must not write it back).
 * PostgreSQL: a transaction-scoped advisory lock, so every replica takes the same lock and a replica that
 * dies mid-refresh releases it with its connection. Its wait is bounded by the store's statement timeout
 * (5 s): the caller decides what to do when another holds it that long. The embedded store is one process's:
 * a lock in memory is that process's whole world.
 */
export function installationLock(db: Database): InstallationLock {
  if (db.kind === 'embedded') return inProcessLock();
  return (name, work) =>
    db.transaction(async (query) => {
      await query('SELECT pg_advisory_xact_lock(hashtext($1))', [`installation:${name}`]);
      return work();
    });
}

function inProcessLock(): InstallationLock {
  const tails = new Map<string, Promise<unknown>>();
  return async (name, work) => {
    const before = tails.get(name) ?? Promise.resolve();
    const run = before.then(work);
    const tail = run.catch(() => {});
    tails.set(name, tail);
    try {
      return await run;
    } finally {
      if (tails.get(name) === tail) tails.delete(name);
    }
  };
}
