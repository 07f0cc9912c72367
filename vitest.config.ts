import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { TEST_NODE_FLAGS } from './test/helpers/node-flags.js';

/**
 * Once every file has been timed (a run before this one), Vitest's own order is right: longest first, so the
 * long store and unit files do not start last and leave the run's final seconds to one or two workers
 * (measured: 106 s instead of 111 s to the last file). On a fresh checkout (CI) it runs the others largest
 * first, which puts the small files that start bots, processes or a browser, which wait the longest, at the
 * end of the run: there they go first, in that order among themselves.
 */
const STARTS_BOTS = /[\\/]test[\\/](e2e|faults|demo)[\\/]|[\\/]test[\\/]developer-dotenv\.test\.ts$/;
class SlowFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const timed = (file: TestSpecification) =>
      this.ctx.cache.getFileTestResults(
        `${file.project.name}:${path.relative(this.ctx.config.root, file.moduleId)}`,
      ) !== undefined;
    if (sorted.every(timed)) return sorted;
    const startsBots = (file: TestSpecification) => STARTS_BOTS.test(file.moduleId);
    return [...sorted.filter(startsBots), ...sorted.filter((file) => !startsBots(file))];
  }
}

/** Test files that measure their own process's memory. */
const OWN_PROCESS = ['test/faults/huge-replies.test.ts'];

/**
 * This run's id: the test databases its processes keep for reuse carry it, and the run drops them when it
 * ends (test/helpers/postgres.ts). Another run at the same time has its own.
 */
const TEST_RUN_ID = randomBytes(4).toString('hex');

export default defineConfig({
  test: {
    env: { BRIDGE_TEST_RUN_ID: TEST_RUN_ID },
    globalSetup: ['test/global-setup.ts'],
    // Generous: a case that starts bot processes one after another (start-up checks, a takeover after a kill)
    // took over 45 s in CI while the rest of the suite kept both cores busy, and a demo's start over a minute
    // on a machine half as fast. What the bot must do in time is bounded by each test's own assertions; these
    // only stop a test that hangs.
    testTimeout: 180_000,
    hookTimeout: 120_000,
    // Child processes, not worker threads: end-to-end files start real servers, as the bot does.
    pool: 'forks',
    // PGlite's WebAssembly on V8's baseline compiler only (test/helpers/node-flags.ts).
    execArgv: TEST_NODE_FLAGS,
    // A worker runs file after file instead of a process per file, so modules load once per worker, not once
    // per file (measured: 380 s of CPU per run became 280 s, with the store copies in /dev/shm). That holds
    // while no module keeps state a later file would trip on (src keeps none; the helpers keep only the
    // ports and Slack ts handed out, which stay unique) and every test restores the timers it fakes.
    isolate: false,
    // Most of a file's time is spent waiting on servers, timers and PostgreSQL, not on a CPU, so more files run
    // at a time than there are cores. Not more: on a day this machine runs slow, 6 or 8 at a time took as long
    // and pushed fault tests past their time bounds (the figures are in the commits that set it).
    maxWorkers: 4,
    sequence: { sequencer: SlowFilesFirst },
    projects: [
      { extends: true, test: { name: 'shared', include: ['test/**/*.test.ts'], exclude: [...OWN_PROCESS] } },
      // A file that measures its process's memory runs in a process of its own: files before it in a shared
      // worker leave garbage and WebAssembly memory that the measurement would count.
      { extends: true, test: { name: 'own-process', include: [...OWN_PROCESS], isolate: true } },
    ],
  },
});
