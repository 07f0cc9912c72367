import { readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { messageOf, StoreError } from './store-error.js';

/** How often the holder touches its lock, and how long a lock nobody touched still counts. */
const LOCK_REFRESH_MS = 5_000;
const LOCK_STALE_MS = 20_000;

/** Who holds a DATA_DIR: a process, on a host (a container's host name is its own). */
export interface DataDirHolder {
  pid: number;
  host: string;
}

/** The DATA_DIRs this process holds: opening one twice in one process would corrupt it as two processes would. */
const heldHere = new Set<string>();

/**
 * PGlite is one process's database: two processes on one DATA_DIR would corrupt it. A lock file names its
 * holder and is touched every few seconds while held, so a second bot (or `npm run sessions`) is kept out,
 * and a lock left by a process that died is taken over (see `dataDirHolder`). Returns its release.
 */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const lockPath = lockPathOf(dataDir);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFile(lockPath, JSON.stringify({ pid: process.pid, host: hostname() }), { flag: 'wx' });
      heldHere.add(path.resolve(dataDir));
      const refresh = setInterval(() => {
        const now = new Date();
        utimes(lockPath, now, now).catch(() => {});
      }, LOCK_REFRESH_MS);
      refresh.unref();
      return async () => {
        clearInterval(refresh);
        heldHere.delete(path.resolve(dataDir));
        await rm(lockPath, { force: true });
      };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EACCES' || code === 'EROFS' || code === 'EPERM') {
        throw new StoreError(
          `DATA_DIR ${dataDir} is not writable by this process (uid ${process.getuid?.() ?? '?'}); make it writable (e.g. chown the volume), or set DATABASE_URL`,
        );
      }
      if (code !== 'EEXIST')
        throw new StoreError(`cannot lock the embedded store in ${dataDir}: ${messageOf(error)}`);
      const holder = await dataDirHolder(dataDir);
      if (holder) {
        const where = holder.host === hostname() ? '' : ` on host ${holder.host}`;
        throw new StoreError(
          `the embedded store in ${dataDir} is in use by process ${holder.pid}${where}${holder.pid === process.pid && !where ? ' (this one)' : ''}; stop it first, or use DATABASE_URL to share a store`,
        );
      }
      await rm(lockPath, { force: true });
    }
  }
  throw new StoreError(`cannot lock the embedded store in ${dataDir}`);
}

/**
 * The process holding the embedded store in `dataDir`, if it may still be running. Its lock counts while it
 * was touched in the last LOCK_STALE_MS (whatever the host: another container on a shared volume is out of
 * sight) and, on this host, while its process lives: this process only if it opened the store itself (a
 * container restarted after a crash runs the bot as the same process id, 1, as the one that left the lock).
 */
export async function dataDirHolder(dataDir: string): Promise<DataDirHolder | undefined> {
  const lockPath = lockPathOf(dataDir);
  let text: string;
  let touchedMs: number;
  try {
    [text, { mtimeMs: touchedMs }] = await Promise.all([readFile(lockPath, 'utf8'), stat(lockPath)]);
  } catch {
    return undefined;
  }
  // An earlier release wrote its process id alone, and never touched the lock: it counts while it lives.
  const legacyPid = Number(text.trim());
  const legacy = Number.isInteger(legacyPid) && legacyPid > 0;
  const holder = legacy ? { pid: legacyPid, host: hostname() } : parseHolder(text);
  if (!holder) return undefined;
  if (!legacy && Date.now() - touchedMs > LOCK_STALE_MS) return undefined;
  if (holder.host !== hostname()) return holder;
  if (holder.pid === process.pid) return heldHere.has(path.resolve(dataDir)) ? holder : undefined;
  return isAlive(holder.pid) ? holder : undefined;
}

function lockPathOf(dataDir: string): string {
  return path.join(dataDir, 'store.lock');
}

function parseHolder(text: string): DataDirHolder | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null) return undefined;
    const { pid, host } = value as Record<string, unknown>;
    return typeof pid === 'number' && typeof host === 'string' ? { pid, host } : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
