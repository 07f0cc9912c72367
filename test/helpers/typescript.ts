import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { watchOutput } from './child-output.js';

/**
 * The project's TypeScript compiler, `tsc`, for the tests that compile or type-check something themselves.
 * TypeScript 7 is a native program whose JavaScript API is still marked unstable, so the tests run its
 * command line, as `npm run build` and `npm test` do.
 */
const PACKAGE = path.dirname(createRequire(import.meta.url).resolve('typescript/package.json'));

/** TypeScript's version, e.g. `7.0.2`. */
export const TYPESCRIPT_VERSION = (
  JSON.parse(readFileSync(path.join(PACKAGE, 'package.json'), 'utf8')) as {
    version: string;
  }
).version;

export interface TscRun {
  code: number;
  /** What it printed on stdout: diagnostics with `--pretty false` (each starting a line), or `--showConfig`'s JSON. */
  stdout: string;
  /** Both streams, for a failure's message. */
  output: string;
}

/** Long enough for a whole-project build on a busy machine; a hung compiler fails its test instead of outliving it. */
const TSC_TIMEOUT_MS = 120_000;

/** Runs `tsc` with `args` in `cwd`; a non-zero exit is returned, not thrown (it means diagnostics). */
export async function runTsc(args: readonly string[], cwd: string): Promise<TscRun> {
  // In a process group of its own: bin/tsc is a Node wrapper that starts the native compiler, and a timeout
  // ends both.
  const child = spawn(process.execPath, [path.join(PACKAGE, 'bin/tsc'), '--pretty', 'false', ...args], {
    cwd,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const watched = watchOutput(child, { timeoutMs: TSC_TIMEOUT_MS, group: true });
  const failed = new Promise<never>((_, reject) => child.once('error', reject));
  const { code, signal } = await Promise.race([watched.exited, failed]);
  if (code === null)
    throw new Error(`tsc ended by ${signal} (over ${TSC_TIMEOUT_MS} ms?):\n${watched.output()}`);
  return { code, stdout: watched.stdout(), output: watched.output() };
}
