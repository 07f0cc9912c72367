import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

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
export function runTsc(args: readonly string[], cwd: string): Promise<TscRun> {
  return new Promise((resolve, reject) => {
    // In a process group of its own: bin/tsc is a Node wrapper that starts the native compiler, and a timeout
    // ends both.
    const child = spawn(process.execPath, [path.join(PACKAGE, 'bin/tsc'), '--pretty', 'false', ...args], {
      cwd,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const timer = setTimeout(() => {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    }, TSC_TIMEOUT_MS);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === null) reject(new Error(`tsc ended by ${signal} (over ${TSC_TIMEOUT_MS} ms?):\n${output}`));
      else resolve({ code, stdout, output });
    });
  });
}
