import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';
import { ENV_VARIABLES } from '../../src/config/index.js';
import { type ChildOutput, type WatchOptions, watchOutput } from './child-output.js';
import { TEST_NODE_FLAGS } from './node-flags.js';

/**
 * Running the project's entry points (the bot, `npm run sessions`, `npm run installations`) in child
 * processes, unaffected by a developer's `.env`: each reads `.env` from its working directory, and the
 * project's root may hold one (with their own Slack app token, their database). Tests start them only
 * through `startEntryPoint` (or `npm start` with `withEveryVariable`); test/developer-dotenv.test.ts checks
 * both.
 */

/** The project's root, where package.json is. */
export const PROJECT_ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * Node's arguments that run an entry point, e.g. `entryPointArgs('src/main.ts')`: its JavaScript compiled
 * for this run by test/global-setup.ts (test/helpers/compiled-sources.ts), by absolute path, so it runs
 * from any working directory; with the flags Vitest's workers run with (test/helpers/node-flags.ts).
 */
function entryPointArgs(file: string): string[] {
  return [
    ...TEST_NODE_FLAGS,
    '--enable-source-maps',
    path.join(inject('compiledSources'), file.replace(/\.ts$/, '.js')),
  ];
}

/**
 * An empty working directory for entry points run by the tests (in test/.tmp, which git ignores): no `.env`
 * is read there. They are always given DATA_DIR or DATABASE_URL, so nothing is written there.
 */
export function emptyWorkdir(): string {
  const dir = path.join(PROJECT_ROOT, 'test/.tmp/workdir');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * `env` with every other variable the bot reads set empty, which the bot reads as unset and which a `.env`
 * does not override. For `npm start`, which runs in the project's root whatever the working directory.
 */
export function withEveryVariable(env: Record<string, string | undefined>): Record<string, string> {
  const all: Record<string, string> = Object.fromEntries(ENV_VARIABLES.map((name) => [name, '']));
  for (const [name, value] of Object.entries(env)) if (value !== undefined) all[name] = value;
  return all;
}

/** An entry point running in a child process, with what it has printed so far. */
export interface EntryPointRun extends ChildOutput {
  child: ChildProcess;
}

export interface EntryPointOptions {
  /**
   * Where it runs: by default an empty directory. The project's root is never one (a developer's `.env` may
   * be there), nor a directory with a `.env` unless `dotEnv: 'read'` says the test wrote it to be read.
   */
  cwd?: string;
  dotEnv?: 'read';
  /** For a command that exits by itself: killed if it has not by then, so a hang fails its test, not outlives it. */
  timeoutMs?: WatchOptions['timeoutMs'];
}

/**
 * Starts an entry point (e.g. `src/main.ts`, `src/cli/sessions.ts`) with `args` and exactly `env` (and PATH).
 */
export function startEntryPoint(
  file: string,
  args: string[],
  env: Record<string, string | undefined>,
  options: EntryPointOptions = {},
): EntryPointRun {
  const cwd = path.resolve(options.cwd ?? emptyWorkdir());
  if (cwd === PROJECT_ROOT) {
    throw new Error("a test started an entry point in the project's root, where a developer's .env is read");
  }
  if (options.dotEnv !== 'read' && existsSync(path.join(cwd, '.env'))) {
    throw new Error(`a test started an entry point in ${cwd}, whose .env it would read: say dotEnv: 'read'`);
  }
  const child = spawn(process.execPath, [...entryPointArgs(file), ...args], {
    env: { PATH: process.env.PATH, ...env },
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return { child, ...watchOutput(child, { timeoutMs: options.timeoutMs }) };
}

/** The command line that runs an entry point as `startEntryPoint` does, for a test that types it in a shell. */
export function entryPointCommand(file: string): string {
  return [process.execPath, ...entryPointArgs(file)].join(' ');
}
