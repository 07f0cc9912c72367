import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Vitest runs the files it has timed longest first, and the others largest first: on a fresh checkout (CI)
 * that puts the small end-to-end files, which wait the longest, at the end of the run. They go first.
 */
class EndToEndFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const endToEnd = (file: TestSpecification) => /[\\/]test[\\/](e2e|faults)[\\/]/.test(file.moduleId);
    return [...sorted.filter(endToEnd), ...sorted.filter((file) => !endToEnd(file))];
  }
}

/** Test files that measure their own process's memory. */
const OWN_PROCESS = ['test/faults/huge-replies.test.ts'];

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    // Generous: a case that starts bot processes one after another (start-up checks, a takeover after a kill)
    // took over 45 s in CI while the rest of the suite kept both cores busy. What the bot must do in time is
    // bounded by each test's own assertions; these only stop a test that hangs.
    testTimeout: 90_000,
    hookTimeout: 60_000,
    // Child processes, not worker threads: end-to-end files start real servers, as the bot does.
    pool: 'forks',
    // A worker runs file after file instead of a process per file, so modules load once per worker, not once
    // per file (measured: 380 s of CPU per run became 280 s, with the store copies in /dev/shm). That holds
    // while no module keeps state a later file would trip on (src keeps none; the helpers keep only the
    // ports and Slack ts handed out, which stay unique) and every test restores the timers it fakes.
    isolate: false,
    // Most of a file's time is spent waiting on servers, timers and PostgreSQL, not on a CPU, so more files run
    // at a time than there are cores; but each file's bots, stores and child processes compete for them, and
    // past three files at a time on a 2-core machine the whole run took longer and more CPU (measured, whole
    // run with the timings of the run before: 2 workers 192 s, 3 workers 182 s and 274 CPU-s, 4 workers 205 s,
    // 6 workers 222 s and 331 CPU-s; on a fresh clone, which has no timings, 3 workers took 255-273 s).
    maxWorkers: 3,
    sequence: { sequencer: EndToEndFirst },
    projects: [
      { extends: true, test: { name: 'shared', include: ['test/**/*.test.ts'], exclude: [...OWN_PROCESS] } },
      // A file that measures its process's memory runs in a process of its own: files before it in a shared
      // worker leave garbage and WebAssembly memory that the measurement would count.
      { extends: true, test: { name: 'own-process', include: [...OWN_PROCESS], isolate: true } },
    ],
  },
});
