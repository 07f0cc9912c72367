import { execFile } from 'node:child_process';
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
  /** What it printed (with `--pretty false`, one diagnostic a line). */
  output: string;
}

/** Runs `tsc` with `args` in `cwd`; a non-zero exit is returned, not thrown (it means diagnostics). */
export function runTsc(args: readonly string[], cwd: string): Promise<TscRun> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [path.join(PACKAGE, 'bin/tsc'), '--pretty', 'false', ...args],
      { cwd, maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
      (error, stdout, stderr) => {
        const output = `${stdout}${stderr}`;
        if (error && typeof error.code !== 'number')
          reject(new Error(`tsc failed: ${error.message}\n${output}`));
        else resolve({ code: error ? Number(error.code) : 0, output });
      },
    );
  });
}
