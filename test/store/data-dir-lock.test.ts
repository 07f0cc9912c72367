import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dataDirHolder, lockDataDir } from '../../src/store/data-dir-lock.js';

describe('the lock on an embedded store directory', () => {
  let dataDir: string;
  const releases: (() => Promise<void>)[] = [];
  const children: ChildProcess[] = [];
  const lockFile = () => path.join(dataDir, 'store.lock');
  const leaveLock = (holder: unknown, touchedSecondsAgo = 0) =>
    writeFile(lockFile(), typeof holder === 'string' ? holder : JSON.stringify(holder)).then(() => {
      const at = new Date(Date.now() - touchedSecondsAgo * 1000);
      return utimes(lockFile(), at, at);
    });
  const lock = async () => {
    const release = await lockDataDir(dataDir);
    releases.push(release);
    return release;
  };
  /** A live process of this host that is not this one. */
  const otherProcess = () => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    children.push(child);
    return child.pid ?? 0;
  };

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'data-dir-lock-'));
  });
  afterEach(async () => {
    for (const release of releases.splice(0)) await release();
    for (const child of children.splice(0)) child.kill();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('keeps a second opening out, in this process or another, and lets it in once released', async () => {
    const release = await lock();
    await expect(lockDataDir(dataDir)).rejects.toThrow(
      `the embedded store in ${dataDir} is in use by process ${process.pid} (this one)`,
    );
    await release();
    await lock();
  });

  it('takes over a lock naming this process that this process never took: a container restarted after a crash', async () => {
    // In a container the bot is process 1 on every start; the lock of the run that crashed names it too.
    await leaveLock({ pid: process.pid, host: hostname() });
    await lock();
  });

  it('takes over the lock of a process of this host that is gone, and respects one that lives', async () => {
    const child = spawn('true', [], { stdio: 'ignore' });
    await once(child, 'exit');
    await leaveLock({ pid: child.pid, host: hostname() });
    await lock();
    await releases.pop()?.();

    const live = otherProcess();
    await leaveLock({ pid: live, host: hostname() });
    await expect(lockDataDir(dataDir)).rejects.toThrow(`is in use by process ${live};`);
  });

  it('respects the lock of another host (a container on a shared volume) while it is touched, not after', async () => {
    await leaveLock({ pid: 1, host: 'another-container' }, 2);
    await expect(lockDataDir(dataDir)).rejects.toThrow('is in use by process 1 on host another-container');
    await leaveLock({ pid: 1, host: 'another-container' }, 60);
    expect(await dataDirHolder(dataDir)).toBeUndefined();
    await lock();
  });

  it("reads an earlier release's lock (its process id alone, never touched): it counts while that process lives", async () => {
    const live = otherProcess();
    await leaveLock(String(live), 3_600);
    expect(await dataDirHolder(dataDir)).toEqual({ pid: live, host: hostname() });
    await leaveLock(String(process.pid), 3_600);
    await lock();
  });
});
